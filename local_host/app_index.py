"""Index what a Python v2 function app declares: HTTP, timer and queue triggers with their bindings.

The local host runs exactly what this finds, and the wiring tests check the same metadata, so a decorator
typo in ``function_app.py`` fails CI. ``%NAME%`` binding references are resolved from the environment, as
the Functions host resolves them from app settings.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.functions as func
from azure.functions.decorators.http import HttpTrigger
from azure.functions.decorators.queue import QueueTrigger
from azure.functions.decorators.timer import TimerTrigger

from scheduler_core.errors import ConfigurationError

_SETTING_REFERENCE = re.compile(r"%([A-Za-z0-9_]+)%")


def resolve_setting_references(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace every ``%NAME%`` in a binding value with the setting's value, as the Functions host does."""
    env = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise ConfigurationError(f"binding refers to %{name}% but no such app setting is defined")
        return env[name]

    return _SETTING_REFERENCE.sub(replace, value)


def setting_references(value: str) -> list[str]:
    """The setting names a binding value refers to as ``%NAME%``."""
    return _SETTING_REFERENCE.findall(value)


@dataclass(frozen=True)
class HttpFunction:
    name: str
    route: str
    methods: frozenset[str]  # empty = every method
    handler: Callable[..., Any]
    arg_name: str


@dataclass(frozen=True)
class TimerFunction:
    name: str
    schedule: str  # as declared, possibly a %NAME% reference
    run_on_startup: bool
    handler: Callable[..., Any]
    arg_name: str
    use_monitor: bool = True  # the host's default for schedules of a minute or more


@dataclass(frozen=True)
class QueueFunction:
    name: str
    queue_name: str  # as declared, possibly a %NAME% reference
    connection: str
    handler: Callable[..., Any]
    arg_name: str


@dataclass(frozen=True)
class AppIndex:
    http: tuple[HttpFunction, ...]
    timers: tuple[TimerFunction, ...]
    queues: tuple[QueueFunction, ...]


def _method_names(methods: Any) -> frozenset[str]:
    if not methods:
        return frozenset()
    return frozenset(str(getattr(m, "value", m)).upper() for m in methods)


def index_app(app: func.FunctionApp) -> AppIndex:
    """Read every function of ``app``. Raises :class:`ConfigurationError` for a trigger it cannot run."""
    http: list[HttpFunction] = []
    timers: list[TimerFunction] = []
    queues: list[QueueFunction] = []
    # get_functions() keeps state on the app and refuses a second call unless this is reset.
    app.functions_bindings = None
    for function in app.get_functions():
        trigger = function.get_trigger()
        handler = function.get_user_function()
        name = function.get_function_name() or handler.__name__
        if isinstance(trigger, HttpTrigger):
            methods = _method_names(trigger.methods)
            http.append(HttpFunction(name, trigger.route or name, methods, handler, trigger.name))
        elif isinstance(trigger, TimerTrigger):
            startup = bool(trigger.run_on_startup)
            monitor = True if getattr(trigger, "use_monitor", None) is None else bool(trigger.use_monitor)
            timers.append(TimerFunction(name, trigger.schedule, startup, handler, trigger.name, monitor))
        elif isinstance(trigger, QueueTrigger):
            connection = trigger.connection or ""
            queues.append(QueueFunction(name, trigger.queue_name, connection, handler, trigger.name))
        else:
            kind = trigger.get_binding_name() if trigger is not None else None
            raise ConfigurationError(f"function {name}: trigger {kind!r} is not supported by the local host")
    return AppIndex(tuple(http), tuple(timers), tuple(queues))


def load_app(spec: str = "function_app:app") -> func.FunctionApp:
    """Import ``module:attribute`` and return the FunctionApp it names."""
    module_name, _, attribute = spec.partition(":")
    module = importlib.import_module(module_name)
    app = getattr(module, attribute or "app")
    if not isinstance(app, func.FunctionApp):
        raise ConfigurationError(f"{spec} is not an azure.functions.FunctionApp")
    return app
