"""A small function app the local-host tests run: one function of each trigger kind, recording calls."""

from __future__ import annotations

import json
import threading

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

lock = threading.Lock()
timer_calls: list[bool] = []
queue_calls: list[tuple[str, int | None]] = []


@app.route(route="items/{id:int}", methods=["GET"])
def get_item(req: func.HttpRequest) -> func.HttpResponse:
    payload = {
        "id": int(req.route_params["id"]),
        "q": req.params.get("q"),
        "agent": req.headers.get("x-test"),
    }
    return func.HttpResponse(json.dumps(payload), mimetype="application/json", headers={"x-handled": "item"})


@app.route(route="{*path}", methods=["GET", "POST"])
def catch_all(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(f"catch-all {req.route_params.get('path')} {req.get_body().decode()}", status_code=404)


@app.timer_trigger(schedule="%SAMPLE_TIMER_SCHEDULE%", arg_name="timer", run_on_startup=False)
def tick(timer: func.TimerRequest) -> None:
    with lock:
        timer_calls.append(timer.past_due)


@app.queue_trigger(arg_name="msg", queue_name="%SAMPLE_QUEUE%", connection="AzureWebJobsStorage")
def consume(msg: func.QueueMessage) -> None:
    body = msg.get_body().decode()
    with lock:
        queue_calls.append((body, msg.dequeue_count))
    if body.startswith("fail"):
        raise RuntimeError(f"refusing {body}")
