"""function_app.py imported afresh, as the Functions worker imports it with the app settings of the moment."""

from __future__ import annotations

import importlib.util
import uuid

import azure.functions as func

from tests.conftest import ROOT


def fresh_function_app() -> func.FunctionApp:
    """function_app.py imported again as a module of its own (what it declares depends on the settings set now)."""
    spec = importlib.util.spec_from_file_location(f"function_app_{uuid.uuid4().hex}", ROOT / "function_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: func.FunctionApp = module.app
    return app
