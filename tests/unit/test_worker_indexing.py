"""function_app.py indexed by Microsoft's Python worker package, the way Azure runs it.

On Python 3.13 and later, Azure Functions runs a Python app through ``azure-functions-runtime`` (PyPI), the
"library worker" that the host's proxy worker loads: it imports ``function_app.py``, builds each function's
metadata (``RpcFunctionMetadata``: bindings, raw binding JSON) and validates every function's parameters
against its bindings. This module runs that package's own code path, in a separate process, on the
deployment package (the project minus ``.funcignore``) with only ``requirements.txt`` installed, as Azure's
remote build leaves it:

1. ``worker_init_request`` (it imports the app, indexes it and registers each function), then
   ``functions_metadata_request`` and one ``function_load_request`` per function, as the proxy worker
   sends them (``WorkerRequest(name, request, properties={"protos", "host"})``);
2. what it reports is checked against what the project expects (names, binding types, directions, routes,
   methods, ``%SETTING%`` queue names, connections), against what the local host indexes from the same file
   (``local_host.app_index``, which ``make run`` serves), and against the checks the Functions host makes on
   worker-indexed metadata before it routes anything.

Test doubles, named as such, where the real part cannot run here:

- ``_worker_protos_double``: the proxy worker's generated ``FunctionRpc_pb2`` module is not published on PyPI
  (it ships inside the host's image). The double builds the messages the library worker uses with
  protobuf's own descriptor API, with the field numbers, types and enum values of the published
  ``FunctionRpc.proto`` (Azure/azure-functions-python-worker), so the worker's values go through real
  protobuf type checks, as in Azure.
- ``HostChecks``: the Functions host (.NET) cannot run here. Its checks on worker-indexed functions are
  restated from its source (azure-functions-host: ``WorkerFunctionMetadataProvider.ValidateMetadata`` and
  ``ValidateBindings``, ``Utility.ValidateName`` and ``ValidateBinding``, ``BindingMetadata.IsTrigger``,
  ``WebScriptHostHttpRoutesManager``, ``ScriptHost.ValidateHttpFunction`` and ``HttpRoutesConflict``).

``azure-functions-runtime`` requires Python 3.13 or later (its Requires-Python), and so does azure-functions
2.x. The worker's environment is a virtual environment made with such an interpreter (``$WORKER_PYTHON``,
else the newest ``python3.13``/``python3.14`` found on PATH or under pyenv), with ``requirements.txt`` and
the worker lines of ``requirements-dev.txt`` installed (about 15 s), kept in pytest's cache
(``.pytest_cache/d/worker-venv``) while those files are unchanged. No such interpreter is a failure, not a
skip.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from local_host.app_index import AppIndex, index_app
from local_host.http_server import STANDARD_METHODS
from tests.conftest import ROOT, sample_settings

#: The first build of the worker's environment installs requirements.txt (15-60 s).
pytestmark = pytest.mark.timeout(900)

#: The packages of requirements-dev.txt that make up the worker (installed beside requirements.txt).
WORKER_PACKAGES = ("azure-functions-runtime", "protobuf")
#: The lowest Python that azure-functions-runtime installs on.
WORKER_MIN_PYTHON = (3, 13)
INSTALL_TIMEOUT = 600
PROBE_TIMEOUT = 120

# --------------------------------------------------------------------------------------------------------
# What the project expects of its own functions (raw binding JSON, as the worker sends it to the host)

_HTTP_OUT = {"direction": "OUT", "type": "http", "name": "$return"}

EXPECTED_RAW_BINDINGS: dict[str, list[dict[str, Any]]] = {
    # No "methods": the host then puts no method constraint on the route, so every method (QUERY, TRACE
    # and the like included) reaches the function, which answers an ARM error body. A list would follow
    # the SDK's HttpMethod enum, which differs between azure-functions versions (2.3 added QUERY).
    "management_api": [
        {
            "direction": "IN",
            "type": "httpTrigger",
            "name": "req",
            "authLevel": "ANONYMOUS",
            "route": "subscriptions/{*resource}",
        },
        _HTTP_OUT,
    ],
    "openapi_document": [
        {
            "direction": "IN",
            "type": "httpTrigger",
            "name": "req",
            "authLevel": "ANONYMOUS",
            "route": "openapi/{document}",
        },
        _HTTP_OUT,
    ],
    "dashboard": [
        {
            "direction": "IN",
            "type": "httpTrigger",
            "name": "req",
            "authLevel": "ANONYMOUS",
            "route": "dashboard/{*path}",
        },
        _HTTP_OUT,
    ],
    "health": [
        {
            "direction": "IN",
            "type": "httpTrigger",
            "name": "req",
            "authLevel": "ANONYMOUS",
            "route": "health",
        },
        _HTTP_OUT,
    ],
    "home": [
        {
            "direction": "IN",
            "type": "httpTrigger",
            "name": "req",
            "authLevel": "ANONYMOUS",
            "route": "{ignored:maxlength(0)?}",
        },
        _HTTP_OUT,
    ],
    "dispatch_tick": [
        {
            "direction": "IN",
            "type": "timerTrigger",
            "name": "timer",
            "schedule": "%SCHEDULER_DISPATCH_SCHEDULE%",
            "runOnStartup": True,
            "useMonitor": True,
        }
    ],
    "cleanup": [
        {
            "direction": "IN",
            "type": "timerTrigger",
            "name": "timer",
            "schedule": "%SCHEDULER_CLEANUP_SCHEDULE%",
            "runOnStartup": False,
            "useMonitor": True,
        }
    ],
    "scan_shard": [
        {
            "direction": "IN",
            "type": "queueTrigger",
            "name": "msg",
            "queueName": "%SCHEDULER_SCAN_QUEUE%",
            "connection": "AzureWebJobsStorage",
        }
    ],
    "execute_occurrence": [
        {
            "direction": "IN",
            "type": "queueTrigger",
            "name": "msg",
            "queueName": "%SCHEDULER_EXECUTION_QUEUE%",
            "connection": "AzureWebJobsStorage",
        }
    ],
    "cleanup_collections": [
        {
            "direction": "IN",
            "type": "queueTrigger",
            "name": "msg",
            "queueName": "%SCHEDULER_CLEANUP_QUEUE%",
            "connection": "AzureWebJobsStorage",
        }
    ],
}

#: The worker's view of each binding (RpcFunctionMetadata.bindings): type, direction, data type.
EXPECTED_BINDING_INFO: dict[str, dict[str, tuple[str, str, str]]] = {
    "management_api": {"req": ("httpTrigger", "in", "undefined"), "$return": ("http", "out", "undefined")},
    "openapi_document": {"req": ("httpTrigger", "in", "undefined"), "$return": ("http", "out", "undefined")},
    "dashboard": {"req": ("httpTrigger", "in", "undefined"), "$return": ("http", "out", "undefined")},
    "health": {"req": ("httpTrigger", "in", "undefined"), "$return": ("http", "out", "undefined")},
    "home": {"req": ("httpTrigger", "in", "undefined"), "$return": ("http", "out", "undefined")},
    "dispatch_tick": {"timer": ("timerTrigger", "in", "undefined")},
    "cleanup": {"timer": ("timerTrigger", "in", "undefined")},
    "scan_shard": {"msg": ("queueTrigger", "in", "undefined")},
    "execute_occurrence": {"msg": ("queueTrigger", "in", "undefined")},
    "cleanup_collections": {"msg": ("queueTrigger", "in", "undefined")},
}

# --------------------------------------------------------------------------------------------------------
# The worker's side: runs in the worker's interpreter (Python 3.13+), shipped there as source text


def _worker_protos_double() -> Any:
    """TEST DOUBLE of the proxy worker's ``protos`` module: the messages of ``FunctionRpc.proto`` that the
    library worker builds or reads during start-up and indexing, as real protobuf classes (same package,
    field numbers, types and enum values as the published .proto)."""
    import types

    from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    scalars = {"string": field.TYPE_STRING, "bool": field.TYPE_BOOL, "int32": field.TYPE_INT32}
    enums = {
        "BindingInfo": {"Direction": ["in", "out", "inout"], "DataType": ["undefined", "string", "binary", "stream"]},
        "StatusResult": {"Status": ["Failure", "Success", "Cancelled"]},
        "RpcRetryOptions": {"RetryStrategy": ["exponential_backoff", "fixed_delay"]},
    }
    # message: [(field name, number, type, repeated)]; "map:V" is map<string, V>; ".X" a message or enum.
    messages: dict[str, list[tuple[str, int, str, bool]]] = {
        "StreamingMessage": [
            ("request_id", 1, "string", False),
            ("function_load_request", 8, ".FunctionLoadRequest", False),
            ("worker_init_request", 17, ".WorkerInitRequest", False),
            ("functions_metadata_request", 29, ".FunctionsMetadataRequest", False),
        ],
        "WorkerInitRequest": [
            ("host_version", 1, "string", False),
            ("capabilities", 2, "map:string", False),
            ("worker_directory", 4, "string", False),
            ("function_app_directory", 5, "string", False),
        ],
        "WorkerInitResponse": [
            ("worker_version", 1, "string", False),
            ("capabilities", 2, "map:string", False),
            ("result", 3, ".StatusResult", False),
            ("worker_metadata", 4, ".WorkerMetadata", False),
        ],
        "WorkerMetadata": [
            ("runtime_name", 1, "string", False),
            ("runtime_version", 2, "string", False),
            ("worker_version", 3, "string", False),
            ("worker_bitness", 4, "string", False),
            ("custom_properties", 5, "map:string", False),
        ],
        "StatusResult": [
            ("result", 1, "string", False),
            ("exception", 2, ".RpcException", False),
            ("status", 4, ".StatusResult.Status", False),
        ],
        "RpcException": [
            ("stack_trace", 1, "string", False),
            ("message", 2, "string", False),
            ("source", 3, "string", False),
            ("is_user_exception", 4, "bool", False),
            ("type", 5, "string", False),
        ],
        "FunctionsMetadataRequest": [("function_app_directory", 1, "string", False)],
        "FunctionMetadataResponse": [
            ("function_metadata_results", 1, ".RpcFunctionMetadata", True),
            ("result", 2, ".StatusResult", False),
            ("use_default_metadata_indexing", 3, "bool", False),
        ],
        "FunctionLoadRequest": [
            ("function_id", 1, "string", False),
            ("metadata", 2, ".RpcFunctionMetadata", False),
            ("managed_dependency_enabled", 3, "bool", False),
        ],
        "FunctionLoadResponse": [
            ("function_id", 1, "string", False),
            ("result", 2, ".StatusResult", False),
            ("is_dependency_downloaded", 3, "bool", False),
        ],
        "RpcFunctionMetadata": [
            ("directory", 1, "string", False),
            ("script_file", 2, "string", False),
            ("entry_point", 3, "string", False),
            ("name", 4, "string", False),
            ("bindings", 6, "map:.BindingInfo", False),
            ("is_proxy", 7, "bool", False),
            ("status", 8, ".StatusResult", False),
            ("language", 9, "string", False),
            ("raw_bindings", 10, "string", True),
            ("function_id", 13, "string", False),
            ("managed_dependency_enabled", 14, "bool", False),
            ("retry_options", 15, ".RpcRetryOptions", False),
            ("properties", 16, "map:string", False),
        ],
        "BindingInfo": [
            ("type", 2, "string", False),
            ("direction", 3, ".BindingInfo.Direction", False),
            ("data_type", 4, ".BindingInfo.DataType", False),
            ("properties", 5, "map:string", False),
        ],
        "RpcRetryOptions": [
            ("max_retry_count", 2, "int32", False),
            ("delay_interval", 3, ".google.protobuf.Duration", False),
            ("minimum_interval", 4, ".google.protobuf.Duration", False),
            ("maximum_interval", 5, ".google.protobuf.Duration", False),
            ("retry_strategy", 6, ".RpcRetryOptions.RetryStrategy", False),
        ],
    }
    package = "AzureFunctionsRpcMessages"
    file = descriptor_pb2.FileDescriptorProto(
        name="worker_protos_double.proto",
        package=package,
        syntax="proto3",
        dependency=["google/protobuf/duration.proto"],
    )
    enum_names = {f"{owner}.{name}" for owner, owned in enums.items() for name in owned}

    def set_type(proto: Any, type_name: str) -> None:
        if type_name in scalars:
            proto.type = scalars[type_name]
        elif type_name.startswith(".google."):
            proto.type = field.TYPE_MESSAGE
            proto.type_name = type_name
        else:
            proto.type = field.TYPE_ENUM if type_name[1:] in enum_names else field.TYPE_MESSAGE
            proto.type_name = f".{package}{type_name}"

    for message_name, fields in messages.items():
        message = file.message_type.add(name=message_name)
        for enum_name, values in enums.get(message_name, {}).items():
            enum = message.enum_type.add(name=enum_name)
            for number, value_name in enumerate(values):
                enum.value.add(name=value_name, number=number)
        for name, number, type_name, repeated in fields:
            proto = message.field.add(name=name, number=number)
            proto.label = field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL
            if type_name.startswith("map:"):
                entry_name = "".join(part.title() for part in name.split("_")) + "Entry"
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, label=field.LABEL_OPTIONAL, type=field.TYPE_STRING)
                value = entry.field.add(name="value", number=2, label=field.LABEL_OPTIONAL)
                set_type(value, type_name[len("map:") :])
                proto.label = field.LABEL_REPEATED
                proto.type = field.TYPE_MESSAGE
                proto.type_name = f".{package}.{message_name}.{entry_name}"
            else:
                set_type(proto, type_name)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(duration_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    module = types.SimpleNamespace()
    for message_name in messages:
        descriptor = pool.FindMessageTypeByName(f"{package}.{message_name}")
        setattr(module, message_name, message_factory.GetMessageClass(descriptor))
    return module


def _worker_probe(app_dir: str, out_path: str) -> None:
    """In the worker's interpreter: start the library worker on ``app_dir`` as the proxy worker does, and
    write what it reports (init result, metadata of every function, load results) to ``out_path``."""
    import asyncio
    import json
    import os
    import sys
    import types

    os.chdir(app_dir)
    sys.path.insert(0, app_dir)  # the app's directory comes first on the worker's path, as in Azure

    import azure_functions_runtime as worker
    from azure_functions_runtime.version import VERSION

    protos = _worker_protos_double()

    def worker_request(name: str, message: Any) -> Any:
        return types.SimpleNamespace(name=name, request=message, properties={"protos": protos, "host": "127.0.0.1"})

    def status(result: Any) -> dict[str, str]:
        names = {protos.StatusResult.Failure: "Failure", protos.StatusResult.Success: "Success"}
        return {"status": names.get(result.status, str(result.status)), "exception": result.exception.message}

    async def run() -> dict[str, Any]:
        init = await worker.worker_init_request(
            worker_request(
                "WorkerInitRequest",
                protos.StreamingMessage(
                    request_id="init",
                    worker_init_request=protos.WorkerInitRequest(
                        host_version="4.0.0", function_app_directory=app_dir, worker_directory=app_dir
                    ),
                ),
            )
        )
        answer: dict[str, Any] = {"worker_version": VERSION, "init": status(init.result), "functions": []}
        if init.result.status != protos.StatusResult.Success:
            return answer
        metadata = await worker.functions_metadata_request(
            worker_request(
                "WorkerMetadataRequest",
                protos.StreamingMessage(
                    request_id="metadata",
                    functions_metadata_request=protos.FunctionsMetadataRequest(function_app_directory=app_dir),
                ),
            )
        )
        answer["metadata"] = status(metadata.result)
        answer["use_default_metadata_indexing"] = metadata.use_default_metadata_indexing
        direction = protos.BindingInfo.DESCRIPTOR.enum_types_by_name["Direction"].values_by_number
        data_type = protos.BindingInfo.DESCRIPTOR.enum_types_by_name["DataType"].values_by_number
        for function in metadata.function_metadata_results:
            loaded = await worker.function_load_request(
                worker_request(
                    "FunctionLoadRequest",
                    protos.StreamingMessage(
                        request_id="load",
                        function_load_request=protos.FunctionLoadRequest(
                            function_id=function.function_id, metadata=function
                        ),
                    ),
                )
            )
            answer["functions"].append(
                {
                    "name": function.name,
                    "function_id": function.function_id,
                    "directory": function.directory,
                    "script_file": function.script_file,
                    "entry_point": function.entry_point,
                    "language": function.language,
                    "is_proxy": function.is_proxy,
                    "has_retry_options": function.HasField("retry_options"),
                    "properties": dict(function.properties),
                    "bindings": {
                        name: [info.type, direction[info.direction].name, data_type[info.data_type].name]
                        for name, info in function.bindings.items()
                    },
                    "raw_bindings": [json.loads(raw) for raw in function.raw_bindings],
                    "load": status(loaded.result),
                }
            )
        return answer

    worker.start_threadpool_executor()
    try:
        answer = asyncio.run(run())
    finally:
        worker.stop_threadpool_executor()
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(answer, handle)


# --------------------------------------------------------------------------------------------------------
# The worker's environment: a Python 3.13+ virtual environment with requirements.txt and the worker


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 2:
        return None
    return int(parts[0]), int(parts[1])


def worker_python() -> tuple[str, tuple[int, int]]:
    """An interpreter azure-functions-runtime installs on: ``$WORKER_PYTHON``, else this session's own if it
    is 3.13+, else the lowest 3.13+ found on PATH or under pyenv."""
    if os.environ.get("WORKER_PYTHON"):
        chosen = os.environ["WORKER_PYTHON"]
        version = _version_of(chosen)
        if version is None or version < WORKER_MIN_PYTHON:
            pytest.fail(f"WORKER_PYTHON={chosen} is not a Python {WORKER_MIN_PYTHON[0]}.{WORKER_MIN_PYTHON[1]}+")
        return chosen, version
    own = _version_of(sys.executable)
    if own is not None and own >= WORKER_MIN_PYTHON:  # the session's own interpreter, when it is new enough
        return sys.executable, own
    candidates = [found for name in ("python3.13", "python3.14") if (found := shutil.which(name))]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [str(path) for path in sorted(pyenv_root.glob("versions/3.1[3-9]*/bin/python3"))]
    found_versions: list[tuple[tuple[int, int], str]] = []
    for candidate in dict.fromkeys(candidates):
        version = _version_of(candidate)
        if version is not None and version >= WORKER_MIN_PYTHON:
            found_versions.append((version, candidate))
    if not found_versions:
        pytest.fail(
            "no Python 3.13+ found for azure-functions-runtime (it requires Python >= 3.13): install one, or "
            "set WORKER_PYTHON to its path; tried " + ", ".join(candidates)
        )
    version, chosen = min(found_versions)
    return chosen, version


def worker_requirement_lines() -> list[str]:
    """The lines of requirements-dev.txt that name the worker's packages (the single place of their pins)."""
    lines = []
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        if name in WORKER_PACKAGES:
            lines.append(requirement)
    assert sorted(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0] for line in lines) == sorted(WORKER_PACKAGES), (
        f"requirements-dev.txt must pin each of {WORKER_PACKAGES}"
    )
    return lines


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    with path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def worker_environment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker's interpreter in a virtual environment with requirements.txt and the worker installed."""
    python, version = worker_python()
    requirements = [f"-r {ROOT / 'requirements.txt'}", *worker_requirement_lines()]
    digest = hashlib.sha256(
        "\n".join([python, repr(version), (ROOT / "requirements.txt").read_text(), *requirements]).encode()
    ).hexdigest()
    cache = request.config.cache
    home = cache.mkdir("worker-venv") if cache is not None else tmp_path_factory.mktemp("worker-venv")
    venv = home / f"py{version[0]}.{version[1]}"
    marker = venv / ".installed"
    with _locked(home / ".lock"):
        if marker.is_file() and marker.read_text().strip() == digest and _venv_python(venv).exists():
            return _venv_python(venv)
        shutil.rmtree(venv, ignore_errors=True)
        created = subprocess.run(
            [python, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
        if created.returncode != 0:
            pytest.fail(f"could not create {venv}:\n{created.stdout}\n{created.stderr}")
        listing = venv / "requirements-worker.txt"
        listing.write_text("\n".join(requirements) + "\n")
        installed = subprocess.run(
            [
                str(_venv_python(venv)),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                str(listing),
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if installed.returncode != 0:
            pytest.fail(f"pip install into {venv} failed:\n{installed.stdout[-3000:]}\n{installed.stderr[-3000:]}")
        marker.write_text(digest + "\n")
    return _venv_python(venv)


# --------------------------------------------------------------------------------------------------------
# The deployment package and the worker's report on it


def funcignore_patterns() -> list[str]:
    lines = (ROOT / ".funcignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ignored(relative: Path, is_dir: bool, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith("/"):
            if is_dir and any(fnmatch.fnmatch(part, pattern[:-1]) for part in relative.parts[-1:]):
                return True
        elif "/" in pattern.strip("/"):
            if fnmatch.fnmatch(relative.as_posix(), pattern.strip("/")):
                return True
        elif fnmatch.fnmatch(relative.name, pattern):
            return True
    return False


def copy_deployment_package(target: Path) -> Path:
    """The files that ``func azure functionapp publish`` (and azd) would upload: the project minus .funcignore."""
    patterns = funcignore_patterns()
    for directory, dirnames, filenames in os.walk(ROOT):
        here = Path(directory).relative_to(ROOT)
        dirnames[:] = sorted(d for d in dirnames if not _ignored(here / d, True, patterns))
        (target / here).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            if not _ignored(here / name, False, patterns):
                shutil.copy2(Path(directory) / name, target / here / name)
    return target


@dataclass(frozen=True)
class WorkerReport:
    app_dir: Path
    raw: dict[str, Any]

    @property
    def functions(self) -> dict[str, dict[str, Any]]:
        return {function["name"]: function for function in self.raw["functions"]}


def run_worker_probe(
    worker_environment: Path, tmp_path_factory: pytest.TempPathFactory, **app_settings: str
) -> WorkerReport:
    """What the library worker reports after starting on the deployment package with the sample app
    settings, changed by ``app_settings``."""
    app_dir = copy_deployment_package(tmp_path_factory.mktemp("wwwroot"))
    out = tmp_path_factory.mktemp("worker") / "report.json"
    source = "\n\n".join(textwrap.dedent(inspect.getsource(f)) for f in (_worker_protos_double, _worker_probe))
    script = f"from typing import Any\n\n{source}\n\nimport sys\n_worker_probe(sys.argv[1], sys.argv[2])\n"
    # The worker's environment holds the app settings (here the sample ones), not the test session's.
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    env.update(sample_settings())
    env.update(app_settings)
    env.update({"FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsScriptRoot": str(app_dir)})
    done = subprocess.run(
        [str(worker_environment), "-c", script, str(app_dir), str(out)],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT,
        env=env,
        cwd=app_dir,
        check=False,
    )
    if done.returncode != 0 or not out.is_file():
        pytest.fail(f"the worker probe failed (rc={done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return WorkerReport(app_dir, json.loads(out.read_text()))


@pytest.fixture(scope="module")
def worker_report(worker_environment: Path, tmp_path_factory: pytest.TempPathFactory) -> WorkerReport:
    """What the library worker reports after starting on the deployment package (the sample settings)."""
    return run_worker_probe(worker_environment, tmp_path_factory)


#: Execution queues of the deployment indexed by :func:`worker_report_k_queues`.
K_QUEUES = 3


@pytest.fixture(scope="module")
def worker_report_k_queues(worker_environment: Path, tmp_path_factory: pytest.TempPathFactory) -> WorkerReport:
    """The same, in a deployment with SCHEDULER_EXECUTION_QUEUE_COUNT = :data:`K_QUEUES`."""
    return run_worker_probe(worker_environment, tmp_path_factory, SCHEDULER_EXECUTION_QUEUE_COUNT=str(K_QUEUES))


# --------------------------------------------------------------------------------------------------------
# TEST DOUBLE of the Functions host's checks on worker-indexed metadata (restated from its source)


class HostChecks:
    """What the host refuses before it routes anything, for the functions a worker indexed."""

    FUNCTION_NAME = re.compile(r"^[a-z][a-z0-9_\-]{0,127}$(?<!^host$)", re.IGNORECASE)
    BINDING_NAME = re.compile(r"^([a-zA-Z][a-zA-Z0-9]{0,127}|\$return)$")
    DIRECTIONS = ("in", "out", "inout")
    #: RFC 9110 token: what an HTTP method can be (the host matches methods as strings).
    TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

    @classmethod
    def function_errors(cls, name: str, raw_bindings: list[dict[str, Any]]) -> list[str]:
        """WorkerFunctionMetadataProvider.ValidateMetadata: the name, then ValidateBindings."""
        errors = []
        if not cls.FUNCTION_NAME.match(name):
            errors.append(f"'{name}' is not a valid function name")
        seen: set[str] = set()
        for binding in raw_bindings:
            binding_name = binding.get("name")
            direction = str(binding.get("direction", "in")).lower()
            if not isinstance(binding_name, str) or not cls.BINDING_NAME.match(binding_name):
                errors.append(f"the binding name {binding_name} is invalid")
                continue
            if direction not in cls.DIRECTIONS:
                errors.append(f"'{binding.get('direction')}' is not a valid binding direction")
            if binding_name.lower() == "$return" and direction != "out":
                errors.append("$return bindings must specify a direction of 'out'")
            if binding_name.lower() in seen:
                errors.append(f"multiple bindings with name '{binding_name}'")
            seen.add(binding_name.lower())
        if not raw_bindings:
            errors.append("at least one binding must be declared")
        triggers = [
            b
            for b in raw_bindings
            if str(b.get("type", "")).lower().endswith("trigger") and str(b.get("direction", "in")).lower() == "in"
        ]
        if not triggers:
            errors.append("no trigger binding specified")
        return errors

    @staticmethod
    def http_trigger(raw_bindings: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next((b for b in raw_bindings if b.get("type") == "httpTrigger"), None)

    @classmethod
    def http_errors(cls, functions: dict[str, list[dict[str, Any]]]) -> list[str]:
        """WebScriptHostHttpRoutesManager: ValidateHttpFunction and HttpRoutesConflict for each HTTP function."""
        errors = []
        seen: dict[str, tuple[str, list[str]]] = {}
        for name, raw_bindings in functions.items():
            trigger = cls.http_trigger(raw_bindings)
            if trigger is None:
                continue
            route = (trigger.get("route") or name).strip("/")
            methods = [str(m) for m in trigger.get("methods") or []]
            if route.lower().startswith(("admin", "runtime")):
                errors.append(f"{name}: the route '{route}' conflicts with the host's built-in routes")
            errors += [f"{name}: method {m!r} is not an HTTP token" for m in methods if not cls.TOKEN.match(m)]
            for other, (other_route, other_methods) in seen.items():
                same_route = route.lower() == other_route.lower()
                if same_route and (not methods or not other_methods or set(methods) & set(other_methods)):
                    errors.append(f"{name}: the route conflicts with the route defined by function '{other}'")
            seen[name] = (route, methods)
        return errors


def test_host_checks_double_refuses_what_the_host_refuses() -> None:
    """The double is not a rubber stamp: each rule it restates refuses a case the host refuses."""
    trigger = {"direction": "IN", "type": "queueTrigger", "name": "msg", "queueName": "q"}
    assert HostChecks.function_errors("scan_shard", [trigger]) == []
    assert HostChecks.function_errors("host", [trigger])  # reserved name
    assert HostChecks.function_errors("1st", [trigger])
    assert HostChecks.function_errors("f", [{**trigger, "name": "my_msg"}])  # binding names: letters, digits
    assert HostChecks.function_errors("f", [trigger, {**trigger, "direction": "OUT", "name": "MSG"}])
    assert HostChecks.function_errors("f", [trigger, {"direction": "IN", "type": "http", "name": "$return"}])
    assert HostChecks.function_errors("f", [{**trigger, "direction": "sideways"}])
    assert HostChecks.function_errors("f", [{"direction": "IN", "type": "queue", "name": "msg"}])  # no trigger
    http = {"direction": "IN", "type": "httpTrigger", "name": "req", "route": "items/{id}"}
    assert HostChecks.http_errors({"a": [http], "b": [{**http, "route": "other"}]}) == []
    assert HostChecks.http_errors({"a": [http], "b": [{**http, "route": "/Items/{id}/"}]})  # same route, all methods
    assert HostChecks.http_errors({"a": [{**http, "methods": ["GET"]}], "b": [{**http, "methods": ["POST"]}]}) == []
    assert HostChecks.http_errors({"a": [{**http, "methods": ["GET"]}], "b": [{**http, "methods": ["GET"]}]})
    assert HostChecks.http_errors({"a": [{**http, "route": "admin/x"}]})
    assert HostChecks.http_errors({"a": [{**http, "methods": ["G(E)T"]}]})


def test_deployment_package_leaves_out_what_funcignore_names(tmp_path: Path) -> None:
    copied = copy_deployment_package(tmp_path)
    assert (copied / "function_app.py").is_file()
    assert (copied / "host.json").is_file()
    assert (copied / "requirements.txt").is_file()
    assert (copied / "scheduler_core" / "__init__.py").is_file()
    for left_out in ("tests", "local_host", "bench", "infra", ".venv", "node_modules", "local.settings.sample.json"):
        assert not (copied / left_out).exists(), left_out
    assert not list(copied.rglob("__pycache__"))


# --------------------------------------------------------------------------------------------------------
# The worker's report


def test_the_worker_starts_and_indexes_the_app(worker_report: WorkerReport) -> None:
    report = worker_report.raw
    assert report["init"] == {"status": "Success", "exception": ""}, report["init"]["exception"]
    assert report["metadata"] == {"status": "Success", "exception": ""}
    assert report["use_default_metadata_indexing"] is False  # the worker indexed; the host reads no function.json
    for function in report["functions"]:
        assert function["load"] == {"status": "Success", "exception": ""}, function["name"]
        assert function["language"] == "python"
        assert function["script_file"] == "function_app.py"
        assert function["entry_point"] == function["name"]
        assert Path(function["directory"]) == worker_report.app_dir
        assert function["properties"] == {"worker_indexed": "True"}
        assert function["is_proxy"] is False
        assert function["has_retry_options"] is False  # retries are the scheduler's own, not the host's


def test_the_worker_finds_every_function_the_local_host_runs(
    worker_report: WorkerReport, function_index: AppIndex
) -> None:
    local = {f.name for f in (*function_index.http, *function_index.timers, *function_index.queues)}
    assert set(worker_report.functions) == local
    assert len(worker_report.raw["functions"]) == len(local)  # no name twice


def test_every_function_binds_as_expected_in_the_worker(worker_report: WorkerReport) -> None:
    functions = worker_report.functions
    assert set(functions) == set(EXPECTED_RAW_BINDINGS), "a function was added or removed: list it above"
    for name, expected in EXPECTED_RAW_BINDINGS.items():
        assert name in functions, f"the worker did not index {name}"
        assert functions[name]["raw_bindings"] == expected, name
        assert functions[name]["bindings"] == {k: list(v) for k, v in EXPECTED_BINDING_INFO[name].items()}, name


def test_the_host_accepts_every_function(worker_report: WorkerReport) -> None:
    functions = {name: f["raw_bindings"] for name, f in worker_report.functions.items()}
    errors = [f"{name}: {error}" for name, raw in functions.items() for error in HostChecks.function_errors(name, raw)]
    errors += HostChecks.http_errors(functions)
    assert errors == []


def test_http_methods_do_not_depend_on_the_sdk_version(worker_report: WorkerReport) -> None:
    """A method list, if any, names only methods that every supported azure-functions knows (1.x on Python
    3.11-3.12, 2.x on 3.13): `list(func.HttpMethod)` gained QUERY in azure-functions 2.3, so a route built
    from it accepts QUERY on one Python and not on another, and the local host lists other methods in Allow."""
    for name, function in worker_report.functions.items():
        trigger = HostChecks.http_trigger(function["raw_bindings"])
        if trigger is None:
            continue
        methods = set(trigger.get("methods") or [])
        assert methods <= set(STANDARD_METHODS), f"{name}: {sorted(methods - set(STANDARD_METHODS))}"


def test_every_setting_a_binding_names_is_an_app_setting(worker_report: WorkerReport) -> None:
    """The host resolves %NAME% from the app settings and refuses to start a function whose setting is
    missing; `make run` gives the app local.settings.sample.json's values."""
    settings = sample_settings()
    for name, function in worker_report.functions.items():
        for binding in function["raw_bindings"]:
            for key, value in binding.items():
                for reference in re.findall(r"%([^%]+)%", str(value)):
                    assert reference in settings, f"{name}.{binding['name']}.{key} refers to %{reference}%"
            if "connection" in binding:
                connection = binding["connection"]
                assert connection in settings or f"{connection}__accountName" in settings, (name, connection)


def test_the_worker_and_the_local_host_read_the_same_bindings(
    worker_report: WorkerReport, function_index: AppIndex
) -> None:
    """local_host.app_index reads the SDK's trigger objects; the worker sends the raw JSON to the host."""
    for http in function_index.http:
        trigger = HostChecks.http_trigger(worker_report.functions[http.name]["raw_bindings"])
        assert trigger is not None, http.name
        assert (trigger["name"], trigger.get("route") or http.name) == (http.arg_name, http.route)
        assert frozenset(m.upper() for m in trigger.get("methods") or []) == http.methods, http.name
    for timer in function_index.timers:
        (binding,) = worker_report.functions[timer.name]["raw_bindings"]
        assert binding["type"] == "timerTrigger"
        assert (binding["name"], binding["schedule"]) == (timer.arg_name, timer.schedule)
        assert (bool(binding.get("runOnStartup")), binding.get("useMonitor", True)) == (
            timer.run_on_startup,
            timer.use_monitor,
        )
    for queue in function_index.queues:
        (binding,) = worker_report.functions[queue.name]["raw_bindings"]
        assert binding["type"] == "queueTrigger"
        assert (binding["name"], binding["queueName"], binding.get("connection", "")) == (
            queue.arg_name,
            queue.queue_name,
            queue.connection,
        )


def test_the_worker_runs_the_sdk_that_requirements_txt_gives_python_3_13(worker_environment: Path) -> None:
    done = subprocess.run(
        [
            str(worker_environment),
            "-c",
            "import sys, azure.functions as f, azure_functions_runtime.version as w;"
            "print(sys.version_info[0], sys.version_info[1], f.__version__, w.VERSION)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    major, minor, sdk, worker = done.stdout.split()
    assert (int(major), int(minor)) >= WORKER_MIN_PYTHON
    assert sdk.split(".")[0] == "2"  # requirements.txt: azure-functions 2.x from Python 3.13 on
    assert worker.split(".")[0] == "1"


# --------------------------------------------------------------------------------------------------------
# K execution queues: the function list is read from the app settings when the worker indexes the app


def test_the_worker_indexes_one_execution_function_per_queue(worker_report_k_queues: WorkerReport) -> None:
    report = worker_report_k_queues.raw
    assert report["init"] == {"status": "Success", "exception": ""}, report["init"]["exception"]
    assert report["metadata"] == {"status": "Success", "exception": ""}
    functions = worker_report_k_queues.functions
    assert len(report["functions"]) == len(functions)  # no name twice
    execution = {name: f for name, f in functions.items() if name.startswith("execute_occurrence")}
    assert set(execution) == {"execute_occurrence", *(f"execute_occurrence_{i}" for i in range(1, K_QUEUES))}
    assert set(functions) - set(execution) == set(EXPECTED_RAW_BINDINGS) - {"execute_occurrence"}
    for name, function in execution.items():
        index = 0 if name == "execute_occurrence" else int(name.rsplit("_", 1)[1])
        assert function["load"] == {"status": "Success", "exception": ""}, name
        assert function["entry_point"] == name
        queue_name = "%SCHEDULER_EXECUTION_QUEUE%" + (f"-{index}" if index else "")
        assert function["raw_bindings"] == [
            {
                "direction": "IN",
                "type": "queueTrigger",
                "name": "msg",
                "queueName": queue_name,
                "connection": "AzureWebJobsStorage",
            }
        ], name
        assert function["bindings"] == {"msg": ["queueTrigger", "in", "undefined"]}, name
    assert len({f["function_id"] for f in report["functions"]}) == len(functions)  # the host keys them by id
    raw = {name: f["raw_bindings"] for name, f in functions.items()}
    errors = [
        f"{name}: {error}" for name, bindings in raw.items() for error in HostChecks.function_errors(name, bindings)
    ]
    assert errors + HostChecks.http_errors(raw) == []


def test_the_worker_indexes_the_execution_functions_the_local_host_runs(
    worker_report_k_queues: WorkerReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local host, given the same app setting, indexes the same functions with the same queue bindings."""
    from tests.unit.test_execution_queues import load_function_app

    local = index_app(load_function_app(monkeypatch, K_QUEUES))
    worker = {
        name: f["raw_bindings"][0]["queueName"]
        for name, f in worker_report_k_queues.functions.items()
        if f["raw_bindings"][0]["type"] == "queueTrigger"
    }
    assert worker == {q.name: q.queue_name for q in local.queues}
