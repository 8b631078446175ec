"""The rules redact.py applies: what each kind of secret looks like, and what is not one.

They follow gitleaks' published rules (its rule ids name most kinds here) and
detect-secrets' plugins, for the shapes agents and people paste: provider tokens with a
fixed prefix, keyed assignments, URLs, headers, command-line passwords, connection strings
and key blocks. Pure data and small predicates; tests/unit/test_redact_corpus.py measures
them (a positive per rule with its exact span, and a negatives corpus).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    # Named groups that hold the secret; the first one that took part is redacted, so that
    # key names, URL users and hosts stay readable. Empty: the whole match is the secret.
    groups: tuple[str, ...] = ()
    # Rejects candidates that are not really secrets (placeholders, code, prose).
    accept: Callable[[re.Match[str], str], bool] | None = None
    # A token of a fixed format: also looked for across one line break.
    wraps: bool = False
    # The rule runs only on text holding one of these (lowercase: in the text lowercased),
    # which keeps the cost of a memory without secrets to a few substring searches.
    needs: tuple[str, ...] = ()
    # The pattern is written in lowercase and matched against the text lowercased (ASCII
    # only, so positions stay the same): case-insensitive, and several times faster.
    folded: bool = False


# Values that stand for a secret rather than being one: $VAR, ${VAR}, {{ var }}, {var},
# <your password>, %(password)s, a YAML tag (!vault), and markers of an earlier redaction.
_PLACEHOLDER_PREFIXES = ("$", "{", "<", "%(", "!", MARKER_PREFIX)
_MASK = re.compile(r"[*xX•.\-_]+")
_NON_SECRET_WORDS = frozenset(
    {
        *("true", "false", "null", "none", "undefined", "required", "optional", "redacted"),
        *("string", "bytes", "bool", "boolean", "integer", "number", "secret", "password"),
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


def _not_placeholder(match: re.Match[str], value: str) -> bool:
    return not _is_placeholder(value)


def _assigned_value_ok(match: re.Match[str], value: str) -> bool:
    if len(value) < 4 or _is_placeholder(value):
        return False
    lowered = value.lower()
    key = _whole_key(match)
    if lowered in _NON_SECRET_WORDS or lowered == key:
        return False
    if match["key"] in ("pass", "pw") and key[: -len(match["key"])][-1:].isalnum():
        return False  # bypass, compass: a short key word must begin the name or follow _ . -
    if match["bare"] is None:
        return True  # a quoted string is data, whatever it looks like
    if value.startswith(("/", "./", "../", "~/")) or _CODE_LIKE.match(value):
        return False
    return not (value.isalpha() and _PROSE_CONTINUES.match(match.string, match.end()))


def _whole_key(match: re.Match[str]) -> str:
    """The identifier the key word ends (DB_PASSWORD for password), lowercased."""
    text, start = match.string, match.start("key")
    while start and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    return text[start : match.end("key")].lower()


def _header_value_ok(match: re.Match[str], value: str) -> bool:
    if _is_placeholder(value) or value.lower() in _NON_SECRET_WORDS:
        return False
    return not (value.isalpha() and _PROSE_CONTINUES.match(match.string, match.end()))


# `=`, `:`, `:=` or `=>` with optional spaces, but not a `==` comparison or a `::` path; an
# optional quote before it closes a quoted key as in JSON.
_ASSIGN = r"""["']?[ \t]*(?::=|=>|[:=](?![:=]))[ \t]*"""
# A value on the command line: quoted, or bare up to the next space.
_CLI_VALUE = r"""(?:'(?P<sq>[^'\n]+)'|"(?P<dq>[^"\n]+)"|(?P<bare>[^\s'"-][^\s'"]*))"""
_CLI_GROUPS = ("sq", "dq", "bare")
_AWS_ID_PREFIXES = (
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "ANPA",
    "ANVA",
    "AIPA",
    "ABIA",
    "ACCA",
    "A3T",
)
_AWS_ID = rf"(?:{'|'.join(_AWS_ID_PREFIXES[:-1])}|A3T[A-Z0-9])[A-Z0-9]{{16}}"
# A 40-character AWS secret key mixes cases and holds a digit or / or + (a git sha does not).
_AWS_SECRET = (
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
    r"(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

# Provider tokens recognised by their fixed prefix and shape (gitleaks' rule of the same
# name, or detect-secrets' plugin), whole match redacted, also across one line break.
_TOKENS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("jwt", r"eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}", ("eyJ",)),
    ("anthropic-key", r"sk-ant-[\w-]{20,}", ("sk-ant-",)),
    # Real keys are random and so hold a digit; kebab-case names like sk-learn-... do not.
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?(?=[\w-]*\d)[\w-]{20,}", ("sk-",)),
    (
        "stripe-key",
        r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{32,}",
        ("sk_", "rk_", "whsec_"),
    ),
    (
        "github-token",
        r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{50,}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    (
        "gitlab-token",
        r"(?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt|glimt|gloas)-[\w-]{20,}",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-", "gloas-"),
    ),
    ("slack-token", r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,}", ("xox", "xapp-")),
    ("aws-access-key-id", _AWS_ID, _AWS_ID_PREFIXES),
    ("google-api-key", r"AIza[\w-]{35}", ("AIza",)),
    ("npm-token", r"npm_[A-Za-z0-9]{36}", ("npm_",)),
    ("huggingface-token", r"(?:hf_|api_org_)[A-Za-z]{34}", ("hf_", "api_org_")),
    ("pypi-token", r"pypi-AgE[IN][\w-]{50,}", ("pypi-AgE",)),
    ("sendgrid-key", r"SG\.[\w-]{22}\.[\w-]{43}", ("SG.",)),
    ("twilio-key", r"SK[0-9a-fA-F]{32}", ("SK",)),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    ("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shp",)),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    ("vault-token", r"hv[sb]\.[\w-]{90,300}", ("hvs.", "hvb.")),
    ("linear-key", r"lin_api_[A-Za-z0-9]{40}", ("lin_api_",)),
    (
        "grafana-token",
        r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}",
        ("glsa_", "glc_"),
    ),
    ("telegram-bot-token", r"\d{8,10}:AA[\w-]{33}", (":AA",)),
    (
        "age-secret-key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        ("AGE-SECRET-KEY-1",),
    ),
    ("doppler-token", r"dp\.pt\.[A-Za-z0-9]{43}", ("dp.pt.",)),
    ("planetscale-token", r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}", ("pscale_",)),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("PMAK-",)),
    ("pulumi-token", r"pul-[a-f0-9]{40}", ("pul-",)),
    ("square-token", r"sq0(?:atp|csp)-[\w-]{22,60}", ("sq0",)),
    ("sentry-token", r"sntry[su]_[\w+/=]{64,}", ("sntry",)),
    ("perplexity-key", r"pplx-[A-Za-z0-9]{48}", ("pplx-",)),
    ("heroku-key", r"HRKU-AA[\w-]{58}", ("HRKU-",)),
    ("artifactory-key", r"AKCp[A-Za-z0-9]{69}", ("AKCp",)),
    ("openshift-token", r"sha256~[\w-]{43}", ("sha256~",)),
)

# Order matters where patterns overlap: a span claimed by an earlier rule is not redacted again,
# so whole key blocks go first, specific token formats before generic ones.
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # A block cut short (no END line) is still a key: redact to the end of the text.
            r".*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
            r"|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*\S+|\Z)",
            re.DOTALL,
        ),
        needs=("private key", "putty-user-key-file"),
    ),
    Rule(
        "slack-webhook",
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[\w/+]{20,})"
        ),
        ("secret",),
        needs=("hooks.slack.com",),
    ),
    Rule(
        "discord-webhook",
        re.compile(r"https://discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[\w-]{60,})"),
        ("secret",),
        needs=("discord",),
    ),
    # A token may follow a `-` or `_` (a slug's `deploy-ghp_...`, `MY_sk-...`): its prefix
    # and random tail are what it is recognised by, not the word before it.
    *(
        Rule(kind, re.compile(rf"(?<![A-Za-z0-9])(?:{pattern})(?![\w-])"), wraps=True, needs=needs)
        for kind, pattern, needs in _TOKENS
    ),
    Rule(
        "aws-secret-access-key",
        re.compile(
            r"(?<![A-Za-z0-9])(?i:(?:aws[ _-]?)?secret[ _-]?access[ _-]?key)"
            + r"(?:[ \t]*\[[^\]\n]*\])?"  # `aws configure` prompts: "... Key [None]: "
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"""
        ),
        ("secret",),
        needs=("secret",),
    ),
    # An AWS secret key next to its key id (a CSV of credentials, a pasted pair): the id
    # alone is caught by its own rule.
    Rule(
        "aws-secret-access-key",
        re.compile(
            rf"(?<![A-Za-z0-9]){_AWS_ID}(?![A-Za-z0-9])[^\n]{{0,100}}?\n?[^\n]{{0,100}}?"
            + _AWS_SECRET
        ),
        ("secret",),
        needs=_AWS_ID_PREFIXES,
    ),
    Rule(
        "azure-storage-key",
        re.compile(r"(?i:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
        ("secret",),
        needs=("accountkey", "sharedaccesskey"),
    ),
    Rule(
        "url-credentials",
        # A password may hold `@`: it ends at the last `@` before the host.
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s/]+)@(?=[\w\[])"
        ),
        ("secret",),
        _not_placeholder,
        needs=("://",),
    ),
    Rule(
        "auth-header",
        re.compile(
            r"(?<![\w-])(?i:(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?i:(?:bearer|basic|token|digest|negotiate|apikey|sso-key)[ \t]+)?"
            r"(?P<secret>[\w.~+/=-]{8,})"
        ),
        ("secret",),
        _header_value_ok,
        needs=("authorization",),
    ),
    Rule(
        "bearer-token",
        re.compile(r"(?<![\w-])(?i:bearer)[ \t]+(?P<secret>(?=[\w.~+/-]*\d)[\w.~+/-]{16,}=*)"),
        ("secret",),
        _not_placeholder,
        needs=("bearer",),
    ),
    *(
        Rule(
            "command-line-password",
            re.compile(before + _CLI_VALUE),
            _CLI_GROUPS,
            _not_placeholder,
            needs=needs,
        )
        for before, needs in (
            (r"(?<![\w-])(?:mysql\w*|mariadb\w*)\b[^\n]*?[ \t]-p", ("mysql", "mariadb")),
            (r"(?<![\w-])sshpass\b[^\n]*?[ \t]-p[ \t]*", ("sshpass",)),
            (r"(?<![\w-])--password[ \t]+", ("--password",)),
        )
    ),
    Rule(
        "command-line-password",
        re.compile(
            r"(?<![\w-])curl\b[^\n]*?[ \t](?:-u|--user)[ \t=]*[\"']?[^\s:'\"]+:"
            r"(?P<secret>[^\s'\"]{3,})"
        ),
        ("secret",),
        _not_placeholder,
        needs=("curl",),
    ),
    Rule(
        "password-assignment",
        re.compile(
            # The key word must end the identifier (DB_PASSWORD, client_secret, x-api-key),
            # so that `max_tokens` or `token_count` do not fire; a short word (pass, pw)
            # must begin it or follow a separator (DB_PASS, but not bypass or compass).
            r"(?P<key>p(?:ass(?:word|wd|phrase)?|wd?)|secret(?:[_-]?key)?|api[_-]?key"
            r"|private[_-]?key|access[_-]?key|auth[_-]?key|token)(?![\w-])"
            + _ASSIGN
            # A bare value stops at `;` or `&` only where the next `key=` of a connection string
            # or query string begins, since passwords may contain either.
            + r"""(?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'"""
            + r"""|(?P<bare>(?:[^\s"'`,;&)]|[;&](?![\w.-]+=))+))"""
        ),
        ("dq", "sq", "bare"),
        _assigned_value_ok,
        needs=("pass", "pw", "secret", "key", "token"),
        folded=True,
    ),
)
