"""Detect and redact secrets in text before it is written to the git-backed vault.

Anything committed to git lives forever in its history, so secrets are replaced by a
`[REDACTED:<kind>]` marker on the way in (fields whose shape is fixed, such as tags, get a
marker of their shape: `redacted-<kind>`). The rules follow gitleaks' published rules and
detect-secrets' plugins for the shapes agents and people paste, tuned for a low
false-positive rate on prose, commands and code; tests/unit/test_redact_corpus.py holds the
corpus that measures both.

Two ways a token gets broken up are undone before matching:
- Zero-width characters (U+200B-U+200D, U+2060, U+FEFF, U+180E, soft hyphen U+00AD) are
  ignored: a token split by one is found, and its redaction covers the whole original span,
  invisible characters included.
- A token of a known format (a fixed prefix: ghp_, sk-, AKIA, xoxb-, eyJ, ...) cut by one
  line break (after an optional backslash, before the next line's indentation) is found
  when the pieces together make the format and the next line goes on with token characters
  that hold a digit (a random tail; a next line beginning with a word is never joined).
  Keyed rules (assignments, URLs, headers) never join lines: their value ends with its line.
"""

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vault_tool.core.secret_rules import MARKER_PREFIX, RULES, Rule


@dataclass(frozen=True)
class Redaction:
    """One kind of secret removed from one field, with its number of occurrences."""

    kind: str
    field: str
    count: int


_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200d\u2060\ufeff]+")
_INVISIBLE_OR_WRAP = re.compile(
    "[\u00ad\u180e\u200b-\u200d\u2060\ufeff]+"
    # The next line goes on with token characters and a digit (a random tail, not a word).
    r"|(?<=[\w+/=.-])\\?\r?\n[ \t]*(?=[\w+/=.-]*\d)"
)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# Each need, and the rules (by position) that name it: a text is screened by one substring
# search per need instead of one per need of each rule (most texts hold none).
_RULES_BY_NEED: dict[str, list[int]] = {}
for _at, _rule in enumerate(RULES):
    for _need in _rule.needs:
        _RULES_BY_NEED.setdefault(_need, []).append(_at)
_ALWAYS = [at for at, rule in enumerate(RULES) if not rule.needs]
_FOLDED_NEEDS = [(need, rules) for need, rules in _RULES_BY_NEED.items() if need.islower()]
_CASED_NEEDS = [(need, rules) for need, rules in _RULES_BY_NEED.items() if not need.islower()]


def _rules_needed(text: "_Stripped") -> tuple[Rule, ...]:
    """The rules, in order, that _needed says text needs."""
    found = [at for need, rules in _FOLDED_NEEDS if need in text.folded for at in rules]
    found += [at for need, rules in _CASED_NEEDS if need in text.text for at in rules]
    return tuple(RULES[at] for at in sorted({*found, *_ALWAYS}))


def _needed(rule: Rule, text: "_Stripped") -> bool:
    """Whether text holds one of what the rule needs (a lowercase need: in any case)."""
    if not rule.needs:
        return True
    return any(need in (text.folded if need.islower() else text.text) for need in rule.needs)


class _Stripped:
    """text without what `removable` matches, and the way back to positions in text."""

    def __init__(self, text: str, removable: re.Pattern[str]) -> None:
        kept: list[str] = []
        self._at: list[int] = []  # where, in the stripped text, each removed piece was
        self._shift: list[int] = []  # characters removed up to and including that piece
        position = removed = 0
        for match in removable.finditer(text):
            kept.append(text[position : match.start()])
            self._at.append(match.start() - removed)
            removed += match.end() - match.start()
            self._shift.append(removed)
            position = match.end()
        kept.append(text[position:])
        self.text = "".join(kept) if self._at else text
        self.folded = self.text.translate(_ASCII_LOWER)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of text that stripped text[start:end] came from."""
        return self._origin(start), self._origin(end - 1) + 1

    def _origin(self, i: int) -> int:
        k = bisect_right(self._at, i)
        return i + (self._shift[k - 1] if k else 0)


def _secret_span(rule: Rule, match: re.Match[str], text: str) -> tuple[int, int] | None:
    group: str | int = next((name for name in rule.groups if match[name] is not None), 0)
    start, end = match.span(group)
    if rule.accept is not None and not rule.accept(match, text[start:end]):
        return None
    return start, end


def _match(
    rules: tuple[Rule, ...],
    text: _Stripped,
    found: list[tuple[int, int, str]],
    original: str | None = None,
) -> None:
    """Add what rules find in text to found. With original: only tokens cut by one line break."""
    for rule in rules:
        if not _needed(rule, text):
            continue
        for match in rule.pattern.finditer(text.folded if rule.folded else text.text):
            span = _secret_span(rule, match, text.text)
            if span is None or span[0] == span[1]:
                continue
            start, end = text.span(*span)
            if original is not None and original.count("\n", start, end) != 1:
                continue
            if any(start < taken_end and taken_start < end for taken_start, taken_end, _ in found):
                continue
            found.append((start, end, rule.kind))


def _find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in text, in order of position, never overlapping."""
    found: list[tuple[int, int, str]] = []
    plain = _Stripped(text, _INVISIBLE)
    rules = _rules_needed(plain)
    wrapping = tuple(rule for rule in rules if rule.wraps)
    if wrapping and "\n" in text:
        # First, so that a wrapped token is not half-claimed by a rule that fits its first line.
        joined = _Stripped(text, _INVISIBLE_OR_WRAP)
        if joined.text != plain.text:
            _match(wrapping, joined, found, original=text)
    _match(rules, plain, found)
    return sorted(found)


# Every kind a redaction can report, in rule order.
KINDS = tuple(dict.fromkeys(rule.kind for rule in RULES))


def marker(kind: str) -> str:
    """What a secret of this kind is replaced by in free text."""
    return f"{MARKER_PREFIX}{kind}]"


def word_marker(kind: str, separator: str = "-") -> str:
    """The marker for a field of fixed shape (a tag, key, kind or predicate)."""
    return "redacted" + separator + kind.replace("-", separator)


def marker_for(separator: str | None) -> Callable[[str], str]:
    """marker for free text (separator None), else word_marker with that separator."""
    if separator is None:
        return marker
    return lambda kind: word_marker(kind, separator)


def redact_text(
    text: str, field: str, replace: Callable[[str], str] = marker
) -> tuple[str, list[Redaction]]:
    """Return text with every secret replaced by replace(kind) ([REDACTED:<kind>] unless
    told otherwise), and what was redacted."""
    pieces: list[str] = []
    counts: dict[str, int] = {}  # insertion order is order of first appearance
    position = 0
    for start, end, kind in _find_secrets(text):
        pieces.append(text[position:start])
        pieces.append(replace(kind))
        position = end
        counts[kind] = counts.get(kind, 0) + 1
    pieces.append(text[position:])
    return "".join(pieces), [Redaction(kind, field, count) for kind, count in counts.items()]


def redact_tree(value: Any) -> Any:
    """A JSON-like value with every string in it redacted (for what is recorded or printed)."""
    if isinstance(value, str):
        return redact_text(value, "")[0]
    if isinstance(value, list):
        return [redact_tree(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_tree(v) for k, v in value.items()}
    return value


def redact_name(name: str) -> str:
    """A file's name or path as the tool records or prints it: each secret in it replaced by
    its marker, the rest as it is, so a person can still find the file (a name holding a
    secret is never taken in, and never written out whole: not to a log, nor a record)."""
    return redact_text(name, "name")[0]


def find_secret_kinds(text: str) -> list[str]:
    """Kinds of secrets present in text, in order of first appearance, each once."""
    return list(dict.fromkeys(kind for _, _, kind in _find_secrets(text)))
