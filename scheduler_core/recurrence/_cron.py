"""Cron strings (``recurrence.cron``, api-version 2026-12-01-preview): the dialect, parsed into field sets.

The dialect is the unix one (``man 5 crontab``) with the extensions Quartz and Hangfire's Cronos added:

* 5 fields (minute hour day-of-month month day-of-week) or 6 with the second first;
* ``*``, numbers, ranges ``a-b``, lists ``a,b``, steps ``*/n``, ``a/n`` (from ``a`` to the field's end) and
  ``a-b/n``; month names ``JAN``-``DEC`` and day names ``SUN``-``SAT`` in any case;
* day-of-week numbers as unix has them: 0 and 7 are Sunday, 1 is Monday (Quartz and EventBridge number
  Sunday 1; the importers convert, and names mean the same everywhere);
* day-of-month ``L`` (the last day), ``L-n`` (n days before it), ``nW`` (the weekday nearest day n, never
  leaving the month), ``LW`` (the last weekday); day-of-week ``nL`` (the last such day of the month) and
  ``n#k`` (the k-th, 1-5); ``?`` in either day field means any;
* ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily`` (``@midnight``) and ``@hourly``;
* a ``CRON_TZ=<zone>`` or ``TZ=<zone>`` prefix naming the zone the fields are read in.

Day-of-month and day-of-week together follow the unix rule (Vixie cron's): when either field begins with
``*`` or is ``?`` a day must match both (so ``*/2`` in day-of-month with ``*`` in day-of-week is every
odd day); otherwise a day matching either fires (``1,15 * MON``: the 1st, the 15th and every Monday).
Every malformed string is a :class:`ValidationError` naming the rule and, when a part of the string is at
fault, the field and the part's 1-based character position (a wrong number of fields, an empty or overlong
string name none: the whole string is at fault).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from scheduler_core.errors import ValidationError

__all__ = ["MACROS", "MAX_CRON_LENGTH", "CronExpression", "parse_cron"]

#: The longest cron string accepted (characters, prefix included).
MAX_CRON_LENGTH = 1000

_FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_RANGES = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTHS = {
    name: i + 1
    for i, name in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"])
}
_DAYS = {name: i for i, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}
#: The @ macros and the five fields each stands for.
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_PREFIX = re.compile(r"(CRON_TZ|TZ)=(\S*)\s+", re.ASCII)
_SHAPE = (
    "5 fields (minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week)"
)


@dataclass(frozen=True, slots=True)
class CronExpression:
    """One parsed cron string. Sets are sorted tuples; weekdays are 0 (Sunday) to 6.

    ``month_days`` are plain days; ``last_offsets`` the ``L``/``L-n`` offsets from the month's last day;
    ``nearest`` the days of ``nW``; ``last_weekday`` is ``LW``. ``week_days`` are plain weekdays,
    ``nth`` the ``(weekday, k)`` of ``n#k``, ``last_of`` the weekdays of ``nL``. ``days_and``: a day must
    match both day fields (one of them began with ``*`` or was ``?``), else either (the unix rule)."""

    text: str
    zone: str | None
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: tuple[int, ...]
    month_days: tuple[int, ...] = ()
    last_offsets: tuple[int, ...] = ()
    nearest: tuple[int, ...] = ()
    last_weekday: bool = False
    week_days: tuple[int, ...] = ()
    nth: tuple[tuple[int, int], ...] = ()
    last_of: tuple[int, ...] = ()
    days_and: bool = True


def _fail(path: str, text: str, position: int, field: str, rule: str) -> ValidationError:
    where = f"at position {position} ({field})" if field else f"at position {position}"
    return ValidationError(path, f"{where}: {rule}, in {text!r}")


class _Field:
    """One field of one cron string, read left to right; ``offset`` is its position in the string."""

    def __init__(self, index: int, token: str, offset: int, fail: Callable[[int, str, str], ValidationError]):
        self.index, self.token, self.offset = index, token, offset
        self.name = _FIELDS[index]
        self.low, self.high = _RANGES[index]
        self._fail = fail

    def error(self, at: int, rule: str) -> ValidationError:
        return self._fail(self.offset + at, self.name, rule)

    def value(self, word: str, at: int) -> int:
        """A number or (month, day-of-week) name in the field's range."""
        names = _MONTHS if self.index == 4 else _DAYS if self.index == 5 else None
        if names is not None and word.upper() in names:
            return names[word.upper()]
        if not word.isascii() or not word.isdigit():
            kind = "a number" if names is None else "a number or a name (" + ", ".join(list(names)[:3]) + ", ...)"
            raise self.error(at, f"{word!r} is not {kind}" if word else f"a value is missing (expected {kind})")
        number = int(word)
        if not self.low <= number <= self.high:
            raise self.error(at, f"{number} is outside {self.low}-{self.high}")
        return number

    def items(self) -> tuple[set[int], list[tuple[str, int, int]]]:
        """The plain values of the field, and its special items (kind, value, k) for the day fields."""
        values: set[int] = set()
        specials: list[tuple[str, int, int]] = []
        at = 0
        for part in self.token.split(","):
            if not part:
                raise self.error(at, "an empty list item (two commas, or a comma at an end)")
            special = self._special(part, at)
            if special is not None:
                specials.append(special)
            else:
                values.update(self._range(part, at))
            at += len(part) + 1
        return values, specials

    def _special(self, part: str, at: int) -> tuple[str, int, int] | None:
        """A day field's ``L``, ``L-n``, ``LW``, ``nW``, ``nL`` or ``n#k`` as (kind, value, k), else None."""
        upper = part.upper()
        if self.index == 3:
            if upper in ("L", "LW"):
                return (upper, 0, 0)
            if upper.startswith("L-"):
                offset = part[2:]
                if not offset.isascii() or not offset.isdigit() or not 0 <= int(offset) <= 30:
                    raise self.error(at + 2, f"L-n needs n from 0 to 30, not {offset!r}")
                return ("L", int(offset), 0)
            if upper.endswith("W") and len(part) > 1:
                return ("W", self.value(part[:-1], at), 0)
        elif self.index == 5:
            if "#" in part:
                day, _, k = part.partition("#")
                weekday = self.value(day, at) % 7
                if not k.isascii() or not k.isdigit() or not 1 <= int(k) <= 5:
                    raise self.error(at + len(day) + 1, f"n#k needs k from 1 to 5, not {k!r}")
                return ("#", weekday, int(k))
            if upper == "L":
                raise self.error(at, "L in day-of-week needs a day before it (5L or FRIL: the last Friday)")
            if upper.endswith("L"):
                return ("L", self.value(part[:-1], at) % 7, 0)
        elif self.index < 3 and ("L" in upper or "W" in upper or "#" in upper or "?" in upper):
            symbol = next(c for c in upper if c in "LW#?")
            raise self.error(at + upper.index(symbol), f"{symbol} is allowed only in day-of-month and day-of-week")
        return None

    def _range(self, part: str, at: int) -> range:
        body, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isascii() or not step_text.isdigit() or int(step_text) == 0:
                raise self.error(at + len(body) + 1, f"a step must be a whole number above 0, not {step_text!r}")
            step = int(step_text)
        if body == "*":
            return range(self.low, self.high + 1, step)
        first_text, dash, last_text = body.partition("-")
        first = self.value(first_text, at)
        if dash:
            last = self.value(last_text, at + len(first_text) + 1)
            if last < first:
                raise self.error(at, f"the range {body} goes backwards (write it as two ranges, e.g. FRI-SAT,SUN-MON)")
            return range(first, last + 1, step)
        return range(first, self.high + 1, step) if slash else range(first, first + 1)


def _split(text: str, path: str) -> tuple[str | None, list[tuple[str, int]]]:
    """The zone of a ``CRON_TZ=``/``TZ=`` prefix and the fields with their 1-based positions."""
    zone = None
    rest_at = 0
    prefix = _PREFIX.match(text)
    if prefix:
        zone = prefix.group(2)
        if not zone:
            raise _fail(path, text, len(prefix.group(1)) + 2, "", f"{prefix.group(1)}= needs a time zone name")
        rest_at = prefix.end()
    fields: list[tuple[str, int]] = []
    for match in re.finditer(r"\S+", text[rest_at:]):
        fields.append((match.group(), rest_at + match.start() + 1))
    return zone, fields


def parse_cron(value: object, path: str) -> CronExpression:
    """One cron string (see the module's docstring for the dialect); ``path`` names it in errors."""
    if not isinstance(value, str):
        raise ValidationError(path, f"must be a cron string such as '0 9 * * MON-FRI', not {type(value).__name__}")
    text = value
    if len(text) > MAX_CRON_LENGTH:
        raise ValidationError(path, f"is {len(text):,} characters long; at most {MAX_CRON_LENGTH:,} are allowed")
    if not text.strip():
        raise ValidationError(path, f"is empty (expected {_SHAPE})")
    zone, fields = _split(text, path)
    if len(fields) == 1 and fields[0][0].startswith("@"):
        macro = fields[0][0].lower()
        if macro not in MACROS:
            raise _fail(
                path, text, fields[0][1], "", f"{fields[0][0]} is not a schedule (use one of {', '.join(MACROS)})"
            )
        expanded = parse_cron(MACROS[macro], path)
        return dataclasses.replace(expanded, text=text, zone=zone)
    if len(fields) not in (5, 6):
        raise ValidationError(path, f"has {len(fields)} fields; a cron string has {_SHAPE}, in {text!r}")
    if len(fields) == 5:
        fields.insert(0, ("0", 0))
    return _parse_fields(text, zone, fields, path)


def _parse_fields(text: str, zone: str | None, fields: list[tuple[str, int]], path: str) -> CronExpression:
    def fail(position: int, field: str, rule: str) -> ValidationError:
        return _fail(path, text, position, field, rule)

    plain: list[tuple[int, ...]] = []
    specials: list[list[tuple[str, int, int]]] = []
    for index, (token, position) in enumerate(fields):
        field = _Field(index, token, position, fail)
        if token == "?":
            if index not in (3, 5):
                raise field.error(0, "? means any day and is allowed only in day-of-month and day-of-week")
            plain.append(tuple(range(7)) if index == 5 else tuple(range(field.low, field.high + 1)))
            specials.append([])
            continue
        values, extra = field.items()
        if index == 5:
            values = {day % 7 for day in values}
        plain.append(tuple(sorted(values)))
        specials.append(extra)
    days_and = any(token.startswith("*") or token == "?" for token in (fields[3][0], fields[5][0]))
    return CronExpression(
        text=text,
        zone=zone,
        seconds=plain[0],
        minutes=plain[1],
        hours=plain[2],
        months=plain[4],
        month_days=plain[3],
        last_offsets=tuple(sorted({n for kind, n, _ in specials[3] if kind == "L"})),
        nearest=tuple(sorted({n for kind, n, _ in specials[3] if kind == "W"})),
        last_weekday=any(kind == "LW" for kind, _, _ in specials[3]),
        week_days=plain[5],
        nth=tuple(sorted({(n, k) for kind, n, k in specials[5] if kind == "#"})),
        last_of=tuple(sorted({n for kind, n, _ in specials[5] if kind == "L"})),
        days_and=days_and,
    )
