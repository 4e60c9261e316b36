"""Senders of the actions a job fires: HTTP(S), Storage queue, Service Bus queue and topic.

Senders take typed actions (:mod:`scheduler_core.model.actions`). :class:`ActionRunner` picks the sender
registered for an action's class; every sender returns an :class:`ActionResult` (success flag and the
history message) and never raises for a failure of the target.
"""

from scheduler_core.actions.base import ActionContext, ActionResult, ActionRunner, Failure, Sender
from scheduler_core.actions.outbound import OutboundPolicy

__all__ = ["ActionContext", "ActionResult", "ActionRunner", "Failure", "OutboundPolicy", "Sender"]
