"""``import --from crontab``: a user's crontab as ``crontab -l`` prints it (Vixie cron, cronie).

Carried, per line ``m h dom mon dow command`` or ``@macro command`` whose command is one curl or wget of an
http(s) URL (:mod:`._shell`): a job whose ``recurrence.cron`` is the line's five fields (or its macro) as
written, in the zone of the last ``CRON_TZ=`` (or ``TZ=``) line above it (``recurrence.timeZone``; none:
UTC, with a note: cron ran the line in the machine's zone), and whose action is the request (method, URL,
headers, body, Basic authentication of ``-u``); ``retryPolicy`` None (the command ran once), or the tool's
own retries (curl ``--retry N``: Exponential from 15 seconds; wget ``--tries``). The five fields are not
checked here: the service's parser decides (a malformed line fails with its 400).

Listed, with the line number and text, and nothing created: a line whose command is anything else (another
program, several commands, shell expansion, ...: the reason says which), ``@reboot`` (not a schedule), a
line that is not a crontab line, a command with standard input (text after an unescaped ``%``). Listed as
not carried while the job is created: the options of the command the request does not carry (``-k``,
``-m``, output files, ...), every environment line but ``CRON_TZ`` and ``TZ`` (``MAILTO``, ``SHELL``,
``PATH``, ...: no shell runs and no mail is sent), and ``TZ=`` itself (cronie reads only ``CRON_TZ``; taken
here as the zone of the following lines).

Names: the URL's host and path as a slug, and 8 hex digits of the line's schedule, zone and command, so the
same crontab always gives the same names; a second identical line gets ``-2``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from scheduler_core.cli.sources._model import UNIX, Conversion, Expected, Names, SourceJob, digest, slug
from scheduler_core.cli.sources._shell import HttpCall, NotCarried, http_call

__all__ = ["convert_crontab", "retry_of"]

_ENVIRONMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")
_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
#: How much of a line a note quotes.
_QUOTED = 200
SYSTEM = "cron (Vixie/cronie)"


def retry_of(call: HttpCall) -> dict[str, Any]:
    """The retry policy of a request a command sent: None unless the tool retried (curl ``--retry N``: its
    back-off doubles from one second, here from the shortest interval, 15 seconds; wget ``--tries``)."""
    if not call.retries:
        return {"retryType": "None"}
    return {"retryType": "Exponential", "retryInterval": "PT15S", "retryCount": min(call.retries, 20)}


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _split_percent(command: str) -> tuple[str, str | None]:
    """cron's ``%``: the command up to the first unescaped ``%`` (``\\%`` is a ``%``), and the standard
    input after it (None when there is none)."""
    out: list[str] = []
    i = 0
    while i < len(command):
        if command.startswith("\\%", i):
            out.append("%")
            i += 2
        elif command[i] == "%":
            return "".join(out), command[i + 1 :]
        else:
            out.append(command[i])
            i += 1
    return "".join(out), None


class _Crontab:
    def __init__(self, origin: str, names: Names) -> None:
        self.origin = origin
        self.found = Conversion()
        self.names = names
        self.zone: str | None = None
        self.zoneless = 0

    def environment(self, where: str, name: str, value: str) -> None:
        if name in ("CRON_TZ", "TZ"):
            self.zone = value or None
            if name == "TZ":
                self.found.note(
                    where,
                    f"TZ={value}",
                    "cronie schedules by CRON_TZ only (TZ is the command's); read here as the zone",
                )
            return
        if name == "MAILTO" and not value:
            return
        why = "no mail is sent: a failed run is in the job's history" if name == "MAILTO" else "no shell runs here"
        self.found.note(where, f"{name}={value}", f"not carried: {why}")

    def line(self, number: int, text: str) -> None:
        where, stripped = f"{self.origin} line {number}", text.strip()
        if not stripped or stripped.startswith("#"):
            return
        setting = _ENVIRONMENT.fullmatch(stripped)
        if setting is not None and not stripped.startswith("@"):
            self.environment(where, setting.group(1), _unquoted(setting.group(2)))
            return
        quoted = stripped[:_QUOTED]
        if stripped.startswith("@"):
            macro, _, command = stripped.partition(" ")
            macro, command = macro.strip(), command.strip()
            if macro.lower() == "@reboot":
                self.found.note(where, quoted, "not carried: @reboot runs at boot, which is not a schedule")
                return
            schedule = macro
        else:
            parts = stripped.split(None, 5)
            if len(parts) < 6:
                self.found.note(where, quoted, "not carried: not a crontab line (5 time fields and a command)")
                return
            schedule, command = " ".join(parts[:5]), parts[5]
        self.job(where, quoted, schedule, command)

    def job(self, where: str, quoted: str, schedule: str, command: str) -> None:
        command, stdin = _split_percent(command)
        try:
            if stdin is not None and stdin.strip():
                raise NotCarried("has standard input (the text after an unescaped %)")
            call = http_call(command)
        except NotCarried as reason:
            self.found.note(where, quoted, f"not carried: the command {reason}")
            return
        recurrence: dict[str, Any] = {"cron": schedule}
        if self.zone is not None:
            recurrence["timeZone"] = self.zone
        else:
            self.zoneless += 1
        parts = urlsplit(call.uri)
        stem = slug(f"{parts.hostname or ''} {parts.path}") or "cron"
        name = self.names.claim(f"{stem}-{digest(schedule, self.zone or '', command)}")
        body = {"properties": {"action": call.action(retry_of(call)), "recurrence": recurrence}}
        expected = Expected(UNIX, schedule, self.zone or "UTC", system=SYSTEM)
        self.found.jobs.append(SourceJob(name, where, body, expected))
        for what, why in call.notes:
            self.found.note(where, what, f"not carried: {why}")


def convert_crontab(text: str, origin: str, names: Names) -> Conversion:
    """The jobs and notes of a crontab (see the module's docstring); job names are claimed from ``names``."""
    crontab = _Crontab(origin, names)
    for number, line in enumerate(text.splitlines(), start=1):
        crontab.line(number, line)
    if crontab.zoneless:
        crontab.found.note(
            origin,
            f"{crontab.zoneless} line(s) without CRON_TZ",
            "cron ran them in the machine's time zone, which the crontab does not name: read here in UTC (put "
            "CRON_TZ=<zone> above them to say otherwise)",
        )
    return crontab.found
