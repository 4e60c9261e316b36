"""A local host for the function app, for machines without Azure Functions Core Tools.

It loads ``function_app.app`` and runs what it declares as the Functions host would: HTTP triggers on
their routes, timer triggers on their NCRONTAB schedules, queue triggers with host.json's queue settings.
``func start`` keeps working for users who have Core Tools; nothing in the app depends on this host.
"""

from local_host.runtime import LocalHost

__all__ = ["LocalHost"]
