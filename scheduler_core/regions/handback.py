"""The automatic hand-back (docs/regions.md, "Hand-back"): a region that is active while the primary region is its
standby hands the lease back once the primary's copy has been current for a while.

The rules it protects:

- **Only a primary that can take over is handed the lease**: its copy of this region's catalog finished a sweep
  within :data:`CURRENT` and has not failed since, without a break, for the whole wait (``after``,
  ``SCHEDULER_REGION_HANDBACK_SECONDS``, 10 minutes by default); a break starts the wait again.
- **Once**: the primary never hands back, and this region hands back only while it is active; the witness keeps the
  hand-back, so no instance of this region renews or takes the lease until the primary has taken it
  (:meth:`~scheduler_core.regions.role.RegionRole.hand_back`), or the witness's hold is over (the primary did not
  take it: this region may take it back).
- **An operator decides instead** with ``after`` None (``SCHEDULER_REGION_HANDBACK_SECONDS=0``): ``region demote``
  and ``region promote``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from scheduler_core.ports import Clock
from scheduler_core.regions.replication import ReplicationState
from scheduler_core.regions.role import RegionRole

__all__ = ["CURRENT", "HandBack", "current"]

log = logging.getLogger("scheduler_core.regions")

#: A standby's copy is current when its last sweep finished within this long (it sweeps every 10 s).
CURRENT = timedelta(seconds=30)


def current(copied: ReplicationState, now: datetime) -> bool:
    """Whether a standby's copy is current at ``now``: a sweep finished within :data:`CURRENT`, none failed since."""
    return copied.swept_at is not None and now - copied.swept_at <= CURRENT and not copied.failing


class HandBack:
    """Hands ``role``'s holding back to ``primary`` (the preferred region's name) once ``primary_copy()`` (the
    primary's record of its copy, read from its storage) has been :func:`current` for ``after`` (None: never)."""

    def __init__(
        self,
        role: RegionRole,
        primary: str,
        after: timedelta | None,
        primary_copy: Callable[[], ReplicationState],
        clock: Clock,
    ) -> None:
        self.role = role
        self.primary = primary
        self.after = after
        self.primary_copy = primary_copy
        self.clock = clock
        self._since: datetime | None = None

    def check(self) -> bool:
        """Look at the primary's copy (the copy's timer calls it every 10 s); hand the lease back when its wait is
        over. Whether this region handed it back now."""
        if self.after is None or not self.primary or self.role.region == self.primary or not self.role.active():
            self._since = None
            return False
        now = self.clock()
        try:
            ready = current(self.primary_copy(), now)
        except Exception:  # the primary's storage out of reach: it is not ready
            log.info("hand-back: the primary region's copy cannot be read", exc_info=True)
            ready = False
        if not ready:
            self._since = None
            return False
        if self._since is None:
            self._since = now
            log.warning("hand-back: %s's copy is current; handing back after %s", self.primary, self.after)
        if now - self._since < self.after:
            return False
        self._since = None
        handed = self.role.hand_back()
        if handed:
            log.warning("hand-back: region %s hands the lease back to %s", self.role.region, self.primary)
        return handed
