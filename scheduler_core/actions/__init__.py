"""Actions a job fires: HTTP(S) now; Storage queue and Service Bus plug in as further senders.

:class:`ActionRunner` picks the sender for an action's ``type``; every sender returns an
:class:`ActionResult` (success flag and the history message) and never raises for a failure of the target.
"""

from scheduler_core.actions.base import ActionContext, ActionResult, ActionRunner, Sender
from scheduler_core.actions.outbound import OutboundPolicy

__all__ = ["ActionContext", "ActionResult", "ActionRunner", "OutboundPolicy", "Sender"]
