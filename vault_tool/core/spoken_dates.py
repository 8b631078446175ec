"""The times a question names as people say them, and whether it asks about now or before.

"what did Ana say last week", "who led the rotation in May", "the lead now": search reads
such phrases as days and months (YYYY-MM-DD, YYYY-MM, the forms core/times.query_dates
finds written out), against today's date, so valid time and memory dates can be matched.
Pure: today is always given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from vault_tool.core.times import query_dates

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = "|".join([*_MONTHS, *(m[:3] for m in _MONTHS if len(m) > 3), "sept"])
# "in May", "during march", "since june", "last april": a month's name after a word that
# makes it a time ("may" alone is a verb).
_NAMED_MONTH = re.compile(rf"\b(?:in|during|since|last|this|of|until|before|after)\s+({_MONTH})\b")
_AGO = re.compile(r"\b(\d+|a|one|two|three|four|five|six)\s+(day|week|month)s?\s+ago\b")
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_PAST = re.compile(
    r"\b(?:was|were|used to|previous(?:ly)?|former(?:ly)?|before|earlier|ago|did|had|"
    r"last|yesterday|back then|until)\b"
)
_PRESENT = re.compile(
    r"\b(?:(?:right |just )?now|nowadays|current(?:ly)?|today|these days|at (?:the moment|present)|"
    r"presently|still)\b"
)
# The words that only say a query is about now: not words a memory is matched by ("who is
# on call right now" is about who is on call; "right" would match any memory saying it).
_ONLY_NOW = re.compile(
    r"\b(?:right now|just now|now|nowadays|currently|these days|at the moment|at present|"
    r"presently)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class NamedTime:
    """What a query says about time: the days and months it names, and its tense."""

    dates: tuple[str, ...]  # YYYY-MM-DD days and YYYY-MM months
    past: bool  # it asks about before ("who was", "last week")
    present: bool  # it asks about now ("now", "current")


def named_time(text: str, today: date) -> NamedTime:
    """The days and months text names (written out or said), and whether it asks about
    the past or the present."""
    lowered = text.lower()
    dates = list(query_dates(text))
    dates += _relative_days(lowered, today)
    for name in _NAMED_MONTH.findall(lowered):
        dates.append(_latest_month(name, today))
    return NamedTime(
        dates=tuple(dict.fromkeys(dates)),
        past=bool(_PAST.search(lowered)),
        present=bool(_PRESENT.search(lowered)),
    )


def _relative_days(text: str, today: date) -> list[str]:
    days: list[date] = []
    if re.search(r"\btoday\b", text):
        days.append(today)
    if re.search(r"\byesterday\b", text):
        days.append(today - timedelta(days=1))
    monday = today - timedelta(days=today.weekday())
    if re.search(r"\blast week\b", text):
        days += [monday - timedelta(days=7 - n) for n in range(7)]
    if re.search(r"\bthis week\b", text):
        days += [monday + timedelta(days=n) for n in range((today - monday).days + 1)]
    found = [d.isoformat() for d in days]
    if re.search(r"\blast month\b", text):
        found.append(_month(today.replace(day=1) - timedelta(days=1)))
    if re.search(r"\bthis month\b", text):
        found.append(_month(today))
    for count, unit in _AGO.findall(text):
        n = _NUMBERS.get(count) or int(count)
        if unit == "month":
            index = today.year * 12 + today.month - 1 - n
            found.append(f"{index // 12:04d}-{index % 12 + 1:02d}")
        else:
            # A day or a week "ago" is said loosely: the days around it count.
            middle = today - timedelta(days=n * (7 if unit == "week" else 1))
            spread = 3 if unit == "week" else 1
            found += [(middle + timedelta(days=k)).isoformat() for k in range(-spread, spread + 1)]
    return found


def _latest_month(name: str, today: date) -> str:
    """The most recent month of that name, this one included."""
    number = next(n for n, m in enumerate(_MONTHS, 1) if m.startswith(name[:3]))
    year = today.year if number <= today.month else today.year - 1
    return f"{year:04d}-{number:02d}"


def _month(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def without_now(text: str) -> str:
    """text without the phrases that only say it is about now (right now, currently)."""
    return _ONLY_NOW.sub(" ", text)


# The words that say when, as named_time reads them: dates, years, months and days said.
_WHEN = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}(?:-\d{{2}})?|(?:19|20)\d{{2}}|today|yesterday|tomorrow|"
    rf"(?:last|this|next) (?:week|month|year)|(?:\d+|a|one|two|three|four|five|six) "
    rf"(?:days?|weeks?|months?|years?) ago|(?:\d{{1,2}}(?:st|nd|rd|th)? )?(?:{_MONTH})"
    rf"(?: \d{{1,2}}(?:st|nd|rd|th)?\b)?)\b",
    re.IGNORECASE,
)


def without_time(text: str) -> str:
    """text without the words that only say when (2020-02-10, in August, last week, now):
    what is left says what a query is about."""
    return _WHEN.sub(" ", without_now(text))
