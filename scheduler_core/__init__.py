"""scheduler_core: an open-source successor to Azure Scheduler, as a Python Azure Functions app.

The package is the product; ``function_app.py`` at the repository root only wires triggers to it.
Domain modules are plain Python; Azure SDK code lives in adapters.
"""

__version__ = "0.1.0"
