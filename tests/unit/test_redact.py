"""Tests for secret redaction.

Every fake secret is assembled at runtime so that this file holds no literal a secret scanner
would flag.
"""

import base64
import json

import pytest

from vault_tool.core.redact import Redaction, find_secret_kinds, redact_text


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


ALNUM36 = "a1B2" * 9
AWS_KEY_ID = "AK" + "IA" + "Q3EGRIBPZ4X7ML2N"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"
GITHUB_PAT = "gh" + "p_" + ALNUM36
GITHUB_FINE_GRAINED = "github" + "_pat_" + "11ABCDEFG0" + "x" * 12 + "_" + "Yz9" * 20
GITLAB_PAT = "gl" + "pat-" + "Xy7_kL2-" * 3
SLACK_BOT = "xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGh" * 3
SLACK_WEBHOOK_PATH = "T0" + "ABC1DEF2/B0" + "GHI3JKL4/" + "a1B2c3D4" * 3
SLACK_WEBHOOK = "https://hooks.slack.com/services/" + SLACK_WEBHOOK_PATH
JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "1234567890", "name": "Agent"}),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ]
)
STRIPE = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
OPENAI = "sk" + "-proj-" + "Ab3_dE6-gH9" * 4
ANTHROPIC = "sk" + "-ant-" + "api03-" + "Zq8-Wx5_Yv2" * 5
GOOGLE = "AI" + "za" + "SyD" + "x9_K-" * 6 + "ab"
NPM = "np" + "m_" + ALNUM36
PRIVATE_KEY_BODY = "\n".join(["MIIEpAIBAAKCAQEA" + "q" * 48, "3Jd+" * 16, "wkZ9/" * 8 + "=="])
DB_PW = "s3cr3t" + "-Pa55"
CLI_PW = "Hunter" + "22!"
BEGIN = "-----" + "BEGIN"
END = "-----" + "END"


def _key_block(label: str) -> str:
    return f"{BEGIN} {label}-----\n{PRIVATE_KEY_BODY}\n{END} {label}-----"


CASES = [
    ("aws-access-key-id", f"aws configure set aws_access_key_id {AWS_KEY_ID}", AWS_KEY_ID),
    ("aws-secret-access-key", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("github-token", f"git clone https://x:{GITHUB_PAT}@github.com/org/repo", GITHUB_PAT),
    ("github-token", f"export GH_TOKEN={GITHUB_FINE_GRAINED}", GITHUB_FINE_GRAINED),
    ("gitlab-token", f"curl --header 'PRIVATE-TOKEN: {GITLAB_PAT}' https://gitlab.com", GITLAB_PAT),
    ("slack-token", f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT),
    ("slack-webhook", f"curl -X POST {SLACK_WEBHOOK} -d '{{}}'", SLACK_WEBHOOK_PATH),
    ("private-key", f"deploy key:\n{_key_block('OPENSSH PRIVATE KEY')}\n", PRIVATE_KEY_BODY),
    ("jwt", f"Authorization: Bearer {JWT}", JWT),
    ("url-credentials", "DATABASE_URL=postgres://app:" + DB_PW + "@db:5432/x", DB_PW),
    ("password-assignment", "mysql -u root --password=" + CLI_PW, CLI_PW),
    ("stripe-key", f"stripe.api_key = '{STRIPE}'", STRIPE),
    ("openai-key", f"OPENAI_API_KEY={OPENAI}", OPENAI),
    ("anthropic-key", f"client = Anthropic(api_key='{ANTHROPIC}')", ANTHROPIC),
    ("google-api-key", f"https://maps.googleapis.com/maps/api/js?key={GOOGLE}", GOOGLE),
    ("npm-token", f"//registry.npmjs.org/:_authToken={NPM}", NPM),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_is_redacted_and_reported(kind: str, text: str, secret: str) -> None:
    redacted, redactions = redact_text(text, "content_md")
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert redactions == [Redaction(kind, "content_md", 1)]
    assert find_secret_kinds(text) == [kind]


@pytest.mark.parametrize(
    "label", ["RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "PRIVATE KEY"]
)
def test_private_key_block_is_replaced_whole(label: str) -> None:
    text = f"before\n{_key_block(label)}\nafter"
    assert redact_text(text, "f") == (
        "before\n[REDACTED:private-key]\nafter",
        [Redaction("private-key", "f", 1)],
    )


def test_pgp_private_key_block() -> None:
    block = _key_block("PGP PRIVATE KEY BLOCK")
    assert redact_text(f"x {block} y", "f")[0] == "x [REDACTED:private-key] y"


def test_private_key_without_end_is_redacted_to_end_of_text() -> None:
    text = f"pasted half a key:\n{BEGIN} RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\nmore"
    assert redact_text(text, "f")[0] == "pasted half a key:\n[REDACTED:private-key]"


def test_url_credentials_keep_user_and_host() -> None:
    text = "connect to postgres://app:" + "pw-" + "9xZ2q" + "@db:5432/x then run migrations"
    redacted, redactions = redact_text(text, "content_md")
    assert redacted == (
        "connect to postgres://app:[REDACTED:url-credentials]@db:5432/x then run migrations"
    )
    assert redactions == [Redaction("url-credentials", "content_md", 1)]


def test_url_with_port_and_no_credentials_is_untouched() -> None:
    text = "see https://example.com:8443/path/x@y and ssh://git@github.com:22/org/repo"
    assert redact_text(text, "f") == (text, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=" + "Tr0ub4dor&3", "DB_PASSWORD=[REDACTED:password-assignment]"),
        (
            '{"api_key": "' + "k3y-" + "VaLuE9" + '"}',
            '{"api_key": "[REDACTED:password-assignment]"}',
        ),
        ("client_secret: " + "q9W8e7R6", "client_secret: [REDACTED:password-assignment]"),
        ("passwd = '" + "hunter 22" + "'", "passwd = '[REDACTED:password-assignment]'"),
        (
            "Server=db;Pwd=" + "S3cret99" + ";Database=app",
            "Server=db;Pwd=[REDACTED:password-assignment];Database=app",
        ),
        (
            "https://api.example.com/v1?access_token=" + "abcd1234efgh" + "&page=2",
            "https://api.example.com/v1?access_token=[REDACTED:password-assignment]&page=2",
        ),
    ],
)
def test_assignment_keeps_key_name(text: str, expected: str) -> None:
    assert redact_text(text, "f")[0] == expected


def test_aws_secret_keeps_key_name() -> None:
    text = f"aws_secret_access_key = {AWS_SECRET}\nregion = eu-west-1"
    assert redact_text(text, "f")[0] == (
        "aws_secret_access_key = [REDACTED:aws-secret-access-key]\nregion = eu-west-1"
    )


def test_specific_kind_wins_over_generic_assignment() -> None:
    redacted, redactions = redact_text(f"token={GITHUB_PAT}", "f")
    assert redacted == "token=[REDACTED:github-token]"
    assert redactions == [Redaction("github-token", "f", 1)]


def test_anthropic_key_is_not_reported_as_openai() -> None:
    assert find_secret_kinds(ANTHROPIC) == ["anthropic-key"]


def test_multiple_secrets_are_counted_per_kind_in_order_of_first_appearance() -> None:
    other_pat = "gh" + "s_" + "Zz9Y" * 9
    text = (
        f"first {AWS_KEY_ID}, then {GITHUB_PAT} and {other_pat};\n"
        f"password: {'Sup3r' + 'S3cret'} and again {GITHUB_PAT}"
    )
    redacted, redactions = redact_text(text, "semantic_delta.facts[0].object")
    field = "semantic_delta.facts[0].object"
    assert redactions == [
        Redaction("aws-access-key-id", field, 1),
        Redaction("github-token", field, 3),
        Redaction("password-assignment", field, 1),
    ]
    assert redacted.count("[REDACTED:github-token]") == 3
    assert find_secret_kinds(text) == ["aws-access-key-id", "github-token", "password-assignment"]


def test_redaction_is_idempotent() -> None:
    text = "\n".join(case[1] for case in CASES) + "\npassword: " + "Sup3rS3cret"
    once, first = redact_text(text, "content_md")
    assert first
    assert redact_text(once, "content_md") == (once, [])
    assert find_secret_kinds(once) == []


PROSE = """\
We merged 3f9c2a1b7d4e6f8091a2b3c4d5e6f708192a3b4c into main after the review, then
cherry-picked 3f9c2a1 onto the release branch. Event 01JDXK3M6Q8W1J4T0P9R7V2B5C was linked to
request 123e4567-e89b-12d3-a456-426614174000 and traced on https://grafana.example.com/d/abc?orgId=1
and http://localhost:8080/api/v1/items. The password is rotated monthly and the token is stored
in vault; see docs for the secret management policy. In the config template use
`password: <your password>` and in CI `export TOKEN=$GITHUB_TOKEN`, or
`api_key: ${{ secrets.API_KEY }}` and `db_password: "{{ vault_db_password }}"`.
Password: rotated monthly by the platform team. Set max_tokens=4096 and token_count: 1200.
Run `git log --oneline -n 20`, `docker run -e PASSWORD -p 5432:5432 postgres:16`, and
`pytest -k "test_token and not slow"`. Masked values like password=**** or secret: xxxx are fine.
"""

CODE = """\
def login(user: str, password: str | None = None) -> Session:
    token = os.environ["GITHUB_TOKEN"]
    api_key: str = settings.API_KEY
    secret = get_secret("db")
    return client.login(user, password=password, token=token)
"""


@pytest.mark.parametrize("text", [PROSE, CODE], ids=["prose", "code"])
def test_no_false_positives(text: str) -> None:
    assert redact_text(text, "content_md") == (text, [])
    assert find_secret_kinds(text) == []


def test_field_is_reported_as_given() -> None:
    _, redactions = redact_text(NPM, "semantic_delta.facts[2].object")
    assert redactions == [Redaction("npm-token", "semantic_delta.facts[2].object", 1)]


def test_empty_text() -> None:
    assert redact_text("", "f") == ("", [])
    assert find_secret_kinds("") == []


def test_kebab_case_name_is_not_an_openai_key() -> None:
    text = "we use sk-learn-style-pipelines-for-everything here"
    assert redact_text(text, "f") == (text, [])
