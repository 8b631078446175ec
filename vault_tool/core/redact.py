"""Detect and redact secrets in text before it is written to the git-backed vault.

Anything committed to git lives forever in its history, so secrets are replaced by a
`[REDACTED:<kind>]` marker on the way in. Rules are tuned for a low false-positive rate on
the prose, commands and code snippets that agents keep as memories.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

_MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True)
class Redaction:
    """One kind of secret removed from one field, with its number of occurrences."""

    kind: str
    field: str
    count: int


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Named groups that hold the secret; the first one that took part is redacted, so that
    # key names, URL users and hosts stay readable. Empty: the whole match is the secret.
    groups: tuple[str, ...] = ()
    # Rejects candidates that are not really secrets (placeholders, code, prose).
    accept: Callable[[re.Match[str], str], bool] | None = None


# Values that stand for a secret rather than being one: $VAR, ${VAR}, {{ var }}, {var},
# <your password>, %(password)s, and markers left by an earlier redaction.
_PLACEHOLDER_PREFIXES = ("$", "{", "<", "%(", _MARKER_PREFIX)
_MASK = re.compile(r"[*xX•.\-_]+")
_NON_SECRET_WORDS = frozenset(
    {
        "true",
        "false",
        "null",
        "none",
        "undefined",
        "required",
        "optional",
        "redacted",
        "string",
        "bytes",
        "bool",
        "boolean",
        "integer",
        "number",
        "secret",
        "password",
        "token",
    }
)
# Bare values that are code, not data: calls, subscripts (`os.environ[`, `Optional[str]`)
# and attribute paths (`settings.API_KEY`).
_CODE_LIKE = re.compile(r"[A-Za-z_][\w.]*[(\[]|(?:[A-Za-z_]+\.)+[A-Za-z_]+$")
# "Password: rotated monthly by ops" is a sentence, not an assignment.
_PROSE_CONTINUES = re.compile(r"[ \t]+[A-Za-z]")


def _is_placeholder(value: str) -> bool:
    return value.startswith(_PLACEHOLDER_PREFIXES) or _MASK.fullmatch(value) is not None


def _url_password_ok(match: re.Match[str], value: str) -> bool:
    return not _is_placeholder(value)


def _assigned_value_ok(match: re.Match[str], value: str) -> bool:
    if len(value) < 4 or _is_placeholder(value):
        return False
    lowered = value.lower()
    if lowered in _NON_SECRET_WORDS or lowered == match["key"].lower():
        return False
    if match["bare"] is None:
        return True  # a quoted string is data, whatever it looks like
    if value.startswith(("/", "./", "../", "~/")) or _CODE_LIKE.match(value):
        return False
    return not (value.isalpha() and _PROSE_CONTINUES.match(match.string, match.end()))


# `=`, `:`, `:=` or `=>` with optional spaces, but not a `==` comparison or a `::` path; an
# optional quote before it closes a quoted key as in JSON.
_ASSIGN = r"""["']?[ \t]*(?::=|=>|[:=](?![:=]))[ \t]*"""

# Order matters where patterns overlap: a span claimed by an earlier rule is not redacted again,
# so whole key blocks go first, specific token formats before generic ones.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # A block cut short (no END line) is still a key: redact to the end of the text.
            r".*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    _Rule(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/services/(?P<secret>T[A-Z0-9]+/B[A-Z0-9]+/\w+)"),
        ("secret",),
    ),
    _Rule(
        "jwt",
        re.compile(r"(?<![\w-])eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}"),
    ),
    _Rule("anthropic-key", re.compile(r"(?<![\w-])sk-ant-[\w-]{20,}")),
    _Rule(
        "openai-key",
        # Real keys are random and so hold a digit; kebab-case names like sk-learn-... do not.
        re.compile(r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?(?=[\w-]*\d)[\w-]{20,}"),
    ),
    _Rule("stripe-key", re.compile(r"(?<!\w)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    _Rule(
        "github-token",
        re.compile(r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{50,})"),
    ),
    _Rule("gitlab-token", re.compile(r"(?<![\w-])(?:glpat|gldt|glrt|glptt)-[\w-]{20,}")),
    _Rule("slack-token", re.compile(r"(?<![\w-])(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}")),
    _Rule(
        "aws-access-key-id",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"
            r"(?![A-Za-z0-9])"
        ),
    ),
    _Rule("google-api-key", re.compile(r"(?<![\w-])AIza[\w-]{35}(?![\w-])")),
    _Rule("npm-token", re.compile(r"(?<!\w)npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Rule(
        "aws-secret-access-key",
        re.compile(
            r"(?<![A-Za-z0-9])(?i:(?:aws[_-]?)?secret[_-]?access[_-]?key)"
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"""
        ),
        ("secret",),
    ),
    _Rule(
        "url-credentials",
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s/@]+)@(?=[\w\[])"
        ),
        ("secret",),
        _url_password_ok,
    ),
    _Rule(
        "password-assignment",
        re.compile(
            # The key word must end the identifier (DB_PASSWORD, client_secret, x-api-key),
            # so that `max_tokens` or `token_count` do not fire.
            r"(?<![\w.-])(?P<key>[\w.-]*?(?i:pass(?:word|wd|phrase)|pwd|secret(?:[_-]?key)?"
            r"|api[_-]?key|private[_-]?key|token))(?![\w-])"
            + _ASSIGN
            # A bare value stops at `;` or `&` only where the next `key=` of a connection string
            # or query string begins, since passwords may contain either.
            + r"""(?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'"""
            + r"""|(?P<bare>(?:[^\s"'`,;&)]|[;&](?![\w.-]+=))+))"""
        ),
        ("dq", "sq", "bare"),
        _assigned_value_ok,
    ),
)


def _secret_span(rule: _Rule, match: re.Match[str]) -> tuple[int, int] | None:
    group: str | int = next((name for name in rule.groups if match[name] is not None), 0)
    if rule.accept is not None and not rule.accept(match, match[group]):
        return None
    return match.span(group)


def _find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in text, in order of position, never overlapping."""
    found: list[tuple[int, int, str]] = []
    for rule in _RULES:
        for match in rule.pattern.finditer(text):
            span = _secret_span(rule, match)
            if span is None:
                continue
            start, end = span
            if any(start < taken_end and taken_start < end for taken_start, taken_end, _ in found):
                continue
            found.append((start, end, rule.kind))
    return sorted(found)


def redact_text(text: str, field: str) -> tuple[str, list[Redaction]]:
    """Return text with every secret replaced by [REDACTED:<kind>], and what was redacted."""
    pieces: list[str] = []
    counts: dict[str, int] = {}  # insertion order is order of first appearance
    position = 0
    for start, end, kind in _find_secrets(text):
        pieces.append(text[position:start])
        pieces.append(f"{_MARKER_PREFIX}{kind}]")
        position = end
        counts[kind] = counts.get(kind, 0) + 1
    pieces.append(text[position:])
    return "".join(pieces), [Redaction(kind, field, count) for kind, count in counts.items()]


def find_secret_kinds(text: str) -> list[str]:
    """Kinds of secrets present in text, in order of first appearance, each once."""
    return list(dict.fromkeys(kind for _, _, kind in _find_secrets(text)))
