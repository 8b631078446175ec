"""The redactor against a corpus: a positive per rule with the exact span that must go (so a
half-redaction fails), and a negatives corpus of ordinary prose, code, commands and configs
that must come out untouched.

The rules follow gitleaks' published rules and detect-secrets' plugins for the shapes agents
and people paste: provider tokens with a fixed prefix, keyed assignments, URLs, headers,
command-line passwords, connection strings, key blocks. Every fake secret is assembled at
runtime from pieces, so this file holds no literal a secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path

import pytest

from vault_tool.core.redact import find_secret_kinds, redact_text

NEGATIVES = Path(__file__).parent.parent / "fixtures" / "redact" / "negatives.txt"
RNG = random.Random(1414)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def pick(alphabet: str, n: int) -> str:
    """n random characters that surely mix cases and digits (as real tokens do)."""
    body = [RNG.choice(alphabet) for _ in range(n)]
    for i, needed in enumerate((string.ascii_uppercase, string.ascii_lowercase, string.digits)):
        pool = [c for c in needed if c in alphabet]
        if pool and n > 3:
            body[i] = RNG.choice(pool)
    return "".join(body)


@dataclass(frozen=True)
class S:
    """A secret inside a case: its kind and its value (the exact span to redact)."""

    kind: str
    value: str


def _jwt() -> str:
    def part(data: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return ".".join([part({"alg": "HS256"}), part({"sub": pick(ALNUM, 10)}), pick(ALNUM, 43)])


AWS_ID = "AK" + "IA" + pick(string.ascii_uppercase + string.digits, 16)
AWS_SECRET = pick(ALNUM + "/+", 40)
GH = "gh" + "p_" + pick(ALNUM, 36)
OPENAI = "sk" + "-proj-" + pick(ALNUM, 40)
# Cut where a wrapped line would cut them; each piece holds a digit, as random tokens do.
GH_HEAD, GH_TAIL = "gh" + "p_" + pick(ALNUM, 21), pick(ALNUM, 15)
OPENAI_HEAD, OPENAI_TAIL = "sk" + "-proj-" + pick(ALNUM, 22), pick(ALNUM, 18)
B64_88 = pick(ALNUM + "+/", 86) + "=="
BEGIN, END = "-----" + "BEGIN", "-----" + "END"
KEY_BODY = f"{pick(ALNUM, 64)}\n{pick(ALNUM, 40)}=="
KEY_BLOCK = f"{BEGIN} RSA PRIVATE KEY-----\n{KEY_BODY}\n{END} RSA PRIVATE KEY-----"
PUTTY = (
    "PuTTY-User-Key-File-"
    + "2: ssh-rsa\nEncryption: none\nPrivate-Lines: 1\n"
    + pick(ALNUM, 64)
    + "\nPrivate-MAC: "
    + pick(HEX, 40)
)

CASES: dict[str, list[str | S]] = {
    # provider tokens with a fixed prefix
    "aws key id": ["aws configure set aws_access_key_id ", S("aws-access-key-id", AWS_ID)],
    "aws secret by name": ["AWS_SECRET_ACCESS_KEY=", S("aws-secret-access-key", AWS_SECRET)],
    "aws secret beside its id": [
        "id ",
        S("aws-access-key-id", AWS_ID),
        " secret ",
        S("aws-secret-access-key", AWS_SECRET),
    ],
    "aws csv credentials": [
        "User name,Access key ID,Secret access key\nci,",
        S("aws-access-key-id", AWS_ID),
        ",",
        S("aws-secret-access-key", AWS_SECRET),
    ],
    "aws configure prompts": [
        "AWS Access Key ID [None]: ",
        S("aws-access-key-id", AWS_ID),
        "\nAWS Secret Access Key [None]: ",
        S("aws-secret-access-key", AWS_SECRET),
        "\nDefault region name [None]: eu-west-1",
    ],
    "github pat": ["export GH_TOKEN=", S("github-token", GH)],
    "github fine-grained": ["token ", S("github-token", "github" + "_pat_" + pick(ALNUM, 82))],
    "gitlab pat": ["PRIVATE-TOKEN: ", S("gitlab-token", "gl" + "pat-" + pick(ALNUM, 20))],
    "slack bot": [
        "SLACK=",
        S("slack-token", "xo" + "xb-" + pick(string.digits, 12) + "-" + pick(ALNUM, 24)),
    ],
    "slack webhook": [
        "https://hooks.slack.com/services/",
        S(
            "slack-webhook",
            "T"
            + pick(string.ascii_uppercase, 10)
            + "/B"
            + pick(string.ascii_uppercase, 10)
            + "/"
            + pick(ALNUM, 24),
        ),
    ],
    "discord webhook": [
        "https://discord.com/api/webhooks/123456789012345678/",
        S("discord-webhook", pick(ALNUM + "-_", 68)),
    ],
    "jwt": ["Authorization: Bearer ", S("jwt", _jwt())],
    "stripe": ["stripe.api_key = '", S("stripe-key", "sk" + "_live_" + pick(ALNUM, 24)), "'"],
    "stripe webhook secret": ["whsec ", S("stripe-key", "wh" + "sec_" + pick(ALNUM, 32))],
    "openai": ["OPENAI_API_KEY=", S("openai-key", OPENAI)],
    "anthropic": ["key ", S("anthropic-key", "sk" + "-ant-" + "api03-" + pick(ALNUM, 93) + "AA")],
    "google": ["maps key ", S("google-api-key", "AI" + "za" + pick(ALNUM, 35)), " ok"],
    "npm": ["//registry.npmjs.org/:_authToken=", S("npm-token", "np" + "m_" + pick(ALNUM, 36))],
    "huggingface": ["HF ", S("huggingface-token", "h" + "f_" + pick(string.ascii_letters, 34))],
    "pypi": ["password = ", S("pypi-token", "py" + "pi-AgEIcHlwaS5vcmc" + pick(ALNUM, 60))],
    "sendgrid": [
        "SG key ",
        S("sendgrid-key", "S" + "G." + pick(ALNUM, 22) + "." + pick(ALNUM, 43)),
    ],
    "twilio": ["twilio ", S("twilio-key", "S" + "K" + pick(HEX, 32))],
    "digitalocean": ["do ", S("digitalocean-token", "do" + "p_v1_" + pick(HEX, 64))],
    "shopify": ["shop ", S("shopify-token", "shp" + "at_" + pick(HEX, 32))],
    "databricks": ["dbx ", S("databricks-token", "da" + "pi" + pick(HEX, 32))],
    "hashicorp vault": ["VAULT ", S("vault-token", "hv" + "s." + pick(ALNUM, 95))],
    "linear": ["lin ", S("linear-key", "lin" + "_api_" + pick(ALNUM, 40))],
    "grafana": ["graf ", S("grafana-token", "gl" + "sa_" + pick(ALNUM, 32) + "_" + pick(HEX, 8))],
    "telegram bot": ["bot ", S("telegram-bot-token", "123456789:" + "AA" + pick(ALNUM, 33))],
    "age": [
        "age ",
        S(
            "age-secret-key",
            "AGE-"
            + "SECRET-KEY-1"
            + "".join(RNG.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)),
        ),
    ],
    "private key": ["deploy key:\n", S("private-key", KEY_BLOCK), "\nend"],
    "putty key": ["ppk:\n", S("private-key", PUTTY)],
    # credentials in URLs, headers and commands
    "url password": ["postgres://app:", S("url-credentials", "Pw" + pick(ALNUM, 12)), "@db:5432/x"],
    "url password with @": [
        "DATABASE_URL=postgres://app:",
        S("url-credentials", "p@ss" + pick(ALNUM, 8)),
        "@db.internal/x",
    ],
    "bearer header": ["curl -H 'Authorization: Bearer ", S("auth-header", pick(ALNUM, 32)), "' x"],
    "basic header": [
        "Authorization: Basic ",
        S("auth-header", base64.b64encode(b"ana:" + pick(ALNUM, 12).encode()).decode()),
    ],
    "token header": ["Authorization: token ", S("auth-header", pick(ALNUM, 40))],
    "bare bearer": ["send it as Bearer ", S("bearer-token", pick(ALNUM, 30)), " please"],
    "azure account key": [
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
        S("azure-storage-key", B64_88),
        ";EndpointSuffix=core.windows.net",
    ],
    "azure shared access key": [
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=",
        S("azure-storage-key", pick(ALNUM, 43) + "="),
    ],
    "mysql -p": [
        "mysql -u root -h db -p",
        S("command-line-password", "Hunt" + pick(ALNUM, 8)),
        " app",
    ],
    "mysqldump -p quoted": [
        "mysqldump -u root -p'",
        S("command-line-password", "x!" + pick(ALNUM, 8)),
        "' db",
    ],
    "sshpass": ["sshpass -p ", S("command-line-password", pick(ALNUM, 12)), " ssh deploy@web"],
    "curl -u": [
        "curl -u ana:",
        S("command-line-password", pick(ALNUM, 12)),
        " https://api.example.com",
    ],
    "--password value": [
        "docker login -u ci --password ",
        S("command-line-password", pick(ALNUM, 14)),
    ],
    # keyed assignments
    "password assignment": ["DB_PASSWORD=", S("password-assignment", pick(ALNUM, 14))],
    "pass with a separator": ["REDIS_PASS=", S("password-assignment", pick(ALNUM, 14))],
    "access key": ["minio access_key: ", S("password-assignment", pick(ALNUM, 20))],
    "json api key": ['{"api_key": "', S("password-assignment", pick(ALNUM, 20)), '"}'],
    # broken up
    "zero-width split": [
        "export GH_TOKEN=",
        S("github-token", GH[:10] + "\u200b" + GH[10:20] + "\u2060" + GH[20:]),
    ],
    "wrapped onto two lines": [
        "export GH_TOKEN=",
        S("github-token", GH_HEAD + "\n" + GH_TAIL),
        "\nnext",
    ],
    "wrapped openai key": ["key: ", S("openai-key", OPENAI_HEAD + "\n    " + OPENAI_TAIL)],
    "wrapped after a backslash": ["--token ", S("github-token", GH_HEAD + "\\\n  " + GH_TAIL)],
    "a whole token, then a line": ["GH_TOKEN=", S("github-token", GH), "\nnext steps: deploy"],
    "zero-width in a url password": [
        "redis://u:",
        S("url-credentials", "ab\u200bcd" + pick(ALNUM, 8)),
        "@cache:6379",
    ],
}


def _text(parts: list[str | S]) -> tuple[str, str]:
    text = "".join(p.value if isinstance(p, S) else p for p in parts)
    expected = "".join(f"[REDACTED:{p.kind}]" if isinstance(p, S) else p for p in parts)
    return text, expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_positive_is_redacted_exactly(name: str) -> None:
    text, expected = _text(CASES[name])
    redacted, _ = redact_text(text, "content_md")
    assert redacted == expected
    kinds = [p.kind for p in CASES[name] if isinstance(p, S)]
    assert find_secret_kinds(text) == list(dict.fromkeys(kinds))


def _negatives() -> list[str]:
    """Paragraphs of the negatives corpus (separated by blank lines)."""
    return [p for p in NEGATIVES.read_text().split("\n\n") if p.strip()]


def test_the_negatives_corpus_is_left_untouched() -> None:
    paragraphs = _negatives()
    assert len(paragraphs) >= 60
    touched = [p for p in paragraphs if redact_text(p, "f")[1]]
    assert touched == []


def test_all_positives_at_once_leave_no_secret() -> None:
    texts = [_text(parts) for parts in CASES.values()]
    joined = "\n\n".join(t for t, _ in texts)
    redacted, _ = redact_text(joined, "content_md")
    assert redacted == "\n\n".join(e for _, e in texts)
