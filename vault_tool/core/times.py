"""Times as the vault writes and reads them, and the days a fact holds on. Pure: no I/O.

Files and calls carry dates (YYYY-MM-DD) or ISO times; the tool writes YYYY-MM-DDTHH:MM:SSZ.
A fact's valid time is a pair of days, compared as strings (ISO days sort as they date).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

# The one grammar of every --since / --until / --as-of and of search's since / until.
MOMENT_FORMS = (
    "YYYY-MM-DD, an ISO time (YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]), today, yesterday, "
    "or days, weeks or months ago (7d, 2w, 3m)"
)
_ISO_MOMENT = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\Z"
)
_AGE = re.compile(r"^(\d{1,5})([dwm])\Z")

# A day (2024-03-15) or a month (2024-03) in a query.
_DATE = re.compile(r"\b(\d{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)\b")


# What every time is checked against where it is read: one an offset carries past either
# end (0001-01-01T00:00-14:00 is fine, +14:00 is year 0) has no UTC time to compare or write.
CALENDAR = "times run from 0001-01-01 to 9999-12-31 in UTC"


class OutOfCalendar(ValueError):
    """A real date and time that is out of the calendar once in UTC."""


def utc_now() -> str:
    """Now, as the tool writes times: YYYY-MM-DDTHH:MM:SSZ."""
    return format_time(datetime.now(UTC))


def format_time(moment: datetime) -> str:
    """A time as the tool writes it: YYYY-MM-DDTHH:MM:SSZ in UTC, the year in four digits
    (strftime's %Y writes year 999 as "999", which no reader of the schema's dates takes)."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def stamp_time(seconds: float) -> str:
    """A file's time stamp (seconds since the epoch) as the tool writes times. A stamp past
    the calendar (file systems keep 64-bit times) is held at the calendar's end."""
    try:
        return format_time(datetime.fromtimestamp(seconds, UTC))
    except (ValueError, OverflowError, OSError):
        return "0001-01-01T00:00:00Z" if seconds < 0 else "9999-12-31T23:59:59Z"


def parse_time(value: str) -> datetime:
    """A date or ISO time from a file or a call -> aware UTC datetime. Raises ValueError,
    also for a time an offset carries out of the calendar (CALENDAR)."""
    text = value.strip().replace(" ", "T", 1)
    if len(text) == 10:
        parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
    else:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    try:
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except OverflowError:
        raise OutOfCalendar(f"{value!r} is out of range: {CALENDAR}") from None


def normalize_timestamp(value: str) -> str:
    """A date or ISO time -> YYYY-MM-DDTHH:MM:SSZ."""
    return format_time(parse_time(value))


def end_of(value: str) -> datetime:
    """The last second a date or time names: a date means the whole day. Raises ValueError."""
    moment = parse_time(value)
    if len(value.strip()) == 10:
        moment += timedelta(days=1, seconds=-1)
    return moment


def query_dates(text: str) -> list[str]:
    """The days (YYYY-MM-DD) and months (YYYY-MM) a query names."""
    return _DATE.findall(text)


def valid_on(fact: dict[str, Any], day: str) -> bool:
    """Whether a fact holds on day (YYYY-MM-DD) by its valid_from / valid_until."""
    return fact.get("valid_from", "") <= day and (
        not fact.get("valid_until") or day <= fact["valid_until"]
    )


def holds_in(fact: dict[str, Any], day_or_month: str) -> bool:
    """Whether a fact holds on a day (YYYY-MM-DD), or on some day of a month (YYYY-MM)."""
    if len(day_or_month) == 10:
        return valid_on(fact, day_or_month)
    # A month: the fact holds on some day of it if it holds on the later of the month's
    # first day and the fact's own first day, and that day is still in the month.
    day = max(fact.get("valid_from") or "", f"{day_or_month}-01")
    return day <= f"{day_or_month}-31" and valid_on(fact, day)


def parse_moment(text: str, today: date | None = None) -> str:
    """A moment in the one grammar (MOMENT_FORMS) -> a day (YYYY-MM-DD) or a UTC time
    (YYYY-MM-DDTHH:MM:SSZ). Relative forms name whole UTC days: `7d` is the day a week
    before today, so `--since 7d` takes in all of that day. Raises ValueError naming the
    accepted forms."""
    value = text.strip()
    today = today or datetime.now(UTC).date()
    try:
        if _ISO_MOMENT.match(value):
            if len(value) == 10:
                return date.fromisoformat(value).isoformat()
            return normalize_timestamp(value)
        if value in ("today", "yesterday"):
            return (today - timedelta(days=1 if value == "yesterday" else 0)).isoformat()
        age = _AGE.match(value)
        if age:
            count, unit = int(age[1]), age[2]
            if unit == "m":
                return _months_before(today, count).isoformat()
            return (today - timedelta(days=count * (7 if unit == "w" else 1))).isoformat()
    except OutOfCalendar:
        raise
    except (ValueError, OverflowError):
        pass
    raise ValueError(f"{text!r} is not a date: use {MOMENT_FORMS}")


def _months_before(day: date, months: int) -> date:
    """The same day of the month, months earlier; the month's last day if it is shorter."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    following = date(year + (month == 11), (month + 1) % 12 + 1, 1)
    return date(year, month + 1, min(day.day, (following - timedelta(days=1)).day))


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|)\s*$")
_SECONDS_PER = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str | float) -> float:
    """Seconds in a duration as a person writes one: `30s`, `5m`, `1h`, or a number of
    seconds; 0 means never. ValueError naming the forms it takes."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text >= 0:
            return float(text)
    elif isinstance(text, str) and (found := _DURATION.match(text)):
        return float(found.group(1)) * _SECONDS_PER[found.group(2)]
    raise ValueError(f"{text!r} is not a duration: write 30s, 5m, 1h or 0 (never)")
