"""The management API: the Microsoft.Scheduler 2016-03-01 REST surface, independent of Azure Functions.

``function_app.py`` converts a ``func.HttpRequest`` into an :class:`ApiRequest`, calls
:meth:`ManagementApi.handle` and converts the :class:`ApiResponse` back.
"""

from scheduler_core.api.handler import ManagementApi
from scheduler_core.api.messages import ApiRequest, ApiResponse

__all__ = ["ApiRequest", "ApiResponse", "ManagementApi"]
