"""Secrets never reach git history: a corpus of every kind redact.py knows, in every field,
through every way in (the engine, the MCP server, hand edits, imports).

The fake secrets are assembled at runtime from random pieces, so this file holds no literal
a secret scanner would flag, and every value is new on each run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import string
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import SERVE, anyio_backend, server_env  # noqa: F401 (fixture)
from tests.helpers import create_args, eventually, git, reason_of
from vault_tool.core.redact import find_secret_kinds
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher

UPPER = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Secret:
    """One fake secret: its kind, the value that must never be stored, a line using it."""

    kind: str
    value: str
    line: str

    @property
    def one_line(self) -> bool:
        return "\n" not in self.line


def corpus(seed: int) -> list[Secret]:
    """One realistic fake secret of every kind redact.py supports."""
    rng = random.Random(seed)

    def pick(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    jwt = ".".join(
        [b64({"alg": "HS256", "typ": "JWT"}), b64({"sub": pick(ALNUM, 12)}), pick(ALNUM + "-_", 43)]
    )
    key_body = "\n".join(pick(ALNUM + "+/", 64) for _ in range(6))
    begin, end = "-----" + "BEGIN", "-----" + "END"
    private_key = f"{begin} OPENSSH PRIVATE KEY-----\n{key_body}\n{end} OPENSSH PRIVATE KEY-----"
    values = {
        "aws-access-key-id": ("AK" + "IA" + pick(UPPER, 16), "aws_access_key_id {}"),
        "aws-secret-access-key": (pick(ALNUM + "/+", 40), "aws_secret_access_key = {}"),
        "github-token": ("gh" + "p_" + pick(ALNUM, 36), "export GH_TOKEN={}"),
        "gitlab-token": ("gl" + "pat-" + pick(ALNUM, 20), "PRIVATE-TOKEN: {}"),
        "slack-token": (
            "xo" + "xb-" + pick(string.digits, 12) + "-" + pick(ALNUM, 24),
            "SLACK_BOT_TOKEN={}",
        ),
        "slack-webhook": (
            "T" + pick(UPPER, 10) + "/B" + pick(UPPER, 10) + "/" + pick(ALNUM, 24),
            "post to https://hooks.slack.com/services/{} when done",
        ),
        "jwt": (jwt, "Authorization: Bearer {}"),
        "stripe-key": ("sk" + "_live_" + pick(ALNUM, 24), "stripe.api_key = '{}'"),
        "openai-key": ("sk" + "-proj-" + pick(ALNUM, 38) + "7Q", "OPENAI_API_KEY={}"),
        "anthropic-key": ("sk" + "-ant-" + "api03-" + pick(ALNUM, 40), "key {} in the vault"),
        "google-api-key": ("AI" + "za" + pick(ALNUM, 35), "maps key {} for the map"),
        "npm-token": ("np" + "m_" + pick(ALNUM, 36), "//registry.npmjs.org/:_authToken={}"),
        "url-credentials": (
            "Pw" + pick(ALNUM, 12) + "9",
            "DATABASE_URL=postgres://app:{}@db.internal:5432/billing",
        ),
        "password-assignment": (pick(ALNUM, 14) + "9#", "DB_PASSWORD={}"),
        "private-key": (key_body.split("\n")[2], "the deploy key:\n" + private_key + "\n"),
    }
    secrets = []
    for kind, (value, template) in values.items():
        line = template.format(value) if "{}" in template else template
        assert find_secret_kinds(line) == [kind], (kind, line, find_secret_kinds(line))
        secrets.append(Secret(kind, value, line))
    return secrets


SECRETS = corpus(int(time.time()))


def assert_nowhere_in_history(vault_path: Path, secrets: list[Secret]) -> None:
    """No secret in any commit's message or diff, on any ref."""
    history = git(vault_path, "log", "-p", "--all", "--format=%H%n%B")
    leaked = [s.kind for s in secrets if s.value in history]
    assert leaked == [], f"secrets in git history: {leaked}"


def assert_nowhere_in_the_vault(vault: Vault, secrets: list[Secret]) -> None:
    """No secret in a memory file or in the index."""
    files = b"".join((vault.root / p).read_bytes() for p, _ in vault._store.iter_memory_paths())
    with vault._index.searcher() as searcher:
        stored = json.dumps([dict(f) for f in searcher.all_stored_fields()], default=str)
    for secret in secrets:
        assert secret.value.encode() not in files, secret.kind
        assert secret.value not in stored, secret.kind


def _call_with(secret: Secret, n: int) -> dict[str, Any]:
    """A create with the secret in the body and, for one-line secrets, in the title, a
    gloss, an entity's name and so in a fact (each field where it fits whole: a cut secret
    could no longer be recognised)."""
    title = f"Memory {n} about a key"
    args = create_args(title=title, body=f"Keep this in mind:\n\n{secret.line}\n")
    if not secret.one_line:
        return args
    delta = args["semantic_delta"]
    if len(f"{title}: {secret.line}") <= 200:
        delta["title"] = f"{title}: {secret.line}"
    if len(f"engineer whose {secret.line}") <= 200:
        delta["entities"][0]["is"] = f"engineer whose {secret.line}"
    holder = f"svc {secret.line}"
    if len(holder) <= 120:
        delta["entities"].append({"n": holder, "kind": "service", "is": "a holder of keys"})
        delta["facts"].append({"subject": "Ana", "predicate": "uses", "object": holder})
    return args


def _item(secret: Secret, n: int) -> dict[str, Any]:
    """The same, as an item of a batch."""
    call = _call_with(secret, n)
    return {"content_md": call["content_md"], "semantic_delta": call["semantic_delta"]}


# --- remember through the engine -----------------------------------------------------------


def test_every_kind_in_every_field_is_redacted_by_remember(vault: Vault, vault_path: Path):
    fields_seen: set[str] = set()
    for n, secret in enumerate(SECRETS):
        result = vault.remember(_call_with(secret, n))
        assert result["status"] == "created"
        kinds = {r["kind"] for r in result["redactions"]}
        assert secret.kind in kinds, (secret.kind, result["redactions"])
        fields_seen |= {r["field"].split(".")[-1].split("[")[0] for r in result["redactions"]}
        assert secret.value not in result["path"]
    assert {"content_md", "title", "is", "n", "object"} <= fields_seen, fields_seen

    # Updates, and a batch of every kind at once.
    first = vault.search({"query": "Memory 0"})["selected_hits"][0]
    update = {
        **_call_with(SECRETS[-2], 100),
        "mode": "update",
        "memory_id": first["memory_id"],
        "expected_version_id": first["version_id"],
    }
    assert vault.remember(update)["redactions"]
    batch = {"mode": "create", "items": [_item(s, 200 + n) for n, s in enumerate(SECRETS)]}
    done = vault.remember(batch)
    assert all(r["redactions"] for r in done["results"])

    assert_nowhere_in_the_vault(vault, SECRETS)
    assert_nowhere_in_history(vault_path, SECRETS)


# --- remember through the MCP server -------------------------------------------------------


@contextlib.asynccontextmanager
async def _session(vault: Path, client_name: str) -> AsyncIterator[Any]:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--vault", str(vault)], env=server_env()
    )
    with open(os.devnull, "w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name=client_name, version="1")
            ) as session,
        ):
            await session.initialize()
            yield session


@pytest.mark.anyio
async def test_every_kind_sent_to_the_server_is_redacted_even_in_the_client_name(
    vault_path: Path,
) -> None:
    github = next(s for s in SECRETS if s.kind == "github-token")
    async with _session(vault_path, github.value) as session:
        batch = {"mode": "create", "items": [_item(s, n) for n, s in enumerate(SECRETS)]}
        result = await session.call_tool("remember", batch)
        assert not result.is_error, result.content[0].text
        structured = result.structured_content
        for item, secret in zip(structured["results"], SECRETS, strict=True):
            assert secret.kind in {r["kind"] for r in item["redactions"]}, item
        assert "Redacted before writing" in result.content[0].text
        for secret in SECRETS:
            found = await session.call_tool("search", {"query": secret.kind.replace("-", " ")})
            assert secret.value not in json.dumps(found.structured_content)
    assert_nowhere_in_history(vault_path, SECRETS)


# --- hand edits ----------------------------------------------------------------------------


def test_a_hand_edit_holding_a_secret_is_never_committed(vault_path: Path):
    with Vault.open(vault_path) as vault:
        tool_made = vault.remember(create_args("A memory a person will edit"))
        watcher = Watcher(vault).start()
        try:
            assert watcher.ready.wait(15)
            notes = vault_path / "notes"
            notes.mkdir()
            paths = []
            for n, secret in enumerate(SECRETS):
                (notes / f"pasted-{n}.md").write_text(f"# Pasted {n}\n\n{secret.line}\n")
                paths.append(f"notes/pasted-{n}.md")
            # A secret typed into the front matter of a memory the tool wrote.
            edited = vault_path / tool_made["path"]
            original = edited.read_text()
            gloss = next(s for s in SECRETS if s.kind == "openai-key")
            edited.write_text(original.replace("backend engineer", f"owner of {gloss.value}"))
            paths.append(tool_made["path"])

            eventually(
                lambda: all("holds a secret" in reason_of(vault, p) for p in paths), timeout=15
            )
            assert_nowhere_in_history(vault_path, SECRETS)
            assert SECRETS[0].value not in json.dumps(vault.search({"query": "Pasted"}))

            # Once the person takes the secrets out, the edits are committed.
            for n in range(len(SECRETS)):
                (notes / f"pasted-{n}.md").write_text(f"# Pasted {n}\n\nKey kept elsewhere.\n")
            edited.write_text(original.replace("backend engineer", "owner of the key vault"))
            eventually(lambda: git(vault_path, "status", "--porcelain") == "")
        finally:
            watcher.stop()
        assert vault.problems() == {}
    assert_nowhere_in_history(vault_path, SECRETS)


# --- imports -------------------------------------------------------------------------------


def test_imports_redact_every_kind_before_anything_is_written(tmp_path: Path, vault_path: Path):
    folder = tmp_path / "notes-to-import"
    folder.mkdir()
    for n, secret in enumerate(SECRETS):
        front = f"---\ntags: [keys]\nowner: {json.dumps(secret.line)}\n---\n"
        title = f"Import {n}: {secret.line}" if secret.one_line else f"Import {n}"
        (folder / f"note {n}.md").write_text(
            f"{front if secret.one_line else ''}# {title}\n\n{secret.line}\n"
        )
    graph = tmp_path / "memory.jsonl"
    lines = []
    for n, secret in enumerate(s for s in SECRETS if s.one_line):
        name = f"Service {n} {secret.line}"
        lines.append(
            {
                "type": "entity",
                "name": name,
                "entityType": "service",
                "observations": [secret.line, "Runs nightly"],
            }
        )
        lines.append(
            {
                "type": "entity",
                "name": f"Team {n}",
                "entityType": "team",
                "observations": [f"Owns the {secret.line}"],
            }
        )
        lines.append({"type": "relation", "from": f"Team {n}", "to": name, "relationType": "owns"})
    graph.write_text("".join(json.dumps(line) + "\n" for line in lines))

    for source, fmt in ((folder, "markdown"), (graph, "kg-jsonl")):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "vault_tool",
                "import",
                str(source),
                "--format",
                fmt,
                "--json",
                "--vault",
                str(vault_path),
            ],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["counts"]["imported"] > 0 and report["counts"]["redacted"] > 0, report
        echoed = [s.kind for s in SECRETS if s.value in done.stdout]
        assert echoed == [], (fmt, "the report echoes", echoed)

    with Vault.open(vault_path) as vault:
        assert_nowhere_in_the_vault(vault, SECRETS)
    assert_nowhere_in_history(vault_path, SECRETS)


# --- fields of a fixed shape: tags, key, entity kind, fact predicate ----------------------


def _lowercase_secrets(seed: int) -> dict[str, str]:
    """Secrets that fit the lowercase shapes of tags, keys, kinds and predicates."""
    rng = random.Random(seed)

    def pick(n: int) -> str:
        return (
            "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n - 1)) + "7"
        )

    return {
        "tag": "gl" + "pat-" + pick(20),
        "key": "xo" + "xb-" + pick(12) + "-" + pick(24),
        "kind": "gl" + "pat-" + pick(24),
        "predicate": "sk" + "_live_" + pick(24),
    }


def test_tags_key_kind_and_predicate_are_redacted_and_listed(vault: Vault, vault_path: Path):
    found = _lowercase_secrets(int(time.time()))
    args = create_args("A memory with secrets in its structured fields")
    delta = args["semantic_delta"]
    delta["tags"] = ["billing", found["tag"]]
    delta["key"] = "billing." + found["key"]
    delta["entities"][0]["kind"] = found["kind"]
    delta["facts"][0]["predicate"] = found["predicate"]
    result = vault.remember(args)
    fields = {r["field"]: r["kind"] for r in result["redactions"]}
    assert fields == {
        "semantic_delta.tags[1]": "gitlab-token",
        "semantic_delta.key": "slack-token",
        "semantic_delta.entities[0].kind": "gitlab-token",
        "semantic_delta.facts[0].predicate": "stripe-key",
    }, result["redactions"]
    text = (vault_path / result["path"]).read_text()
    assert "redacted-gitlab-token" in text and "redacted_stripe_key" in text
    assert "billing.redacted-slack-token" in text
    history = git(vault_path, "log", "-p", "--all")
    assert not [name for name, value in found.items() if value in history]


def test_imports_redact_tags_kinds_and_relation_types(tmp_path: Path, vault_path: Path):
    found = _lowercase_secrets(int(time.time()) + 1)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "n.md").write_text(
        f"---\ntags: [keys, {found['tag']}]\n---\n# A note with a tagged key\n\nWords.\n"
    )
    graph = tmp_path / "memory.jsonl"
    lines = [
        {"type": "entity", "name": "Ana", "entityType": found["kind"], "observations": ["x"]},
        {"type": "entity", "name": "Billing", "entityType": "service", "observations": ["y"]},
        {"type": "relation", "from": "Ana", "to": "Billing", "relationType": found["predicate"]},
    ]
    graph.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for source, fmt in ((folder, "markdown"), (graph, "kg-jsonl")):
        done = subprocess.run(
            [sys.executable, "-m", "vault_tool", "import", str(source), "--format", fmt,
             "--json", "--vault", str(vault_path)],
            capture_output=True, text=True, env=os.environ.copy(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["counts"]["redacted"] > 0, report
        assert not [name for name, value in found.items() if value in done.stdout], done.stdout
    history = git(vault_path, "log", "-p", "--all")
    assert not [name for name, value in found.items() if value in history]


# --- the retrieval ledger ------------------------------------------------------------------


def test_search_queries_are_redacted_before_the_ledger_records_them(vault: Vault):
    vault.remember(create_args("Where the deploy key lives"))
    for secret in SECRETS:
        if secret.one_line:
            vault.search({"query": f"deploy key {secret.line}", "tags": ["deploy"]})
    vault.search({"query": "deploy key"})
    records = list(vault.ledger_records("search"))
    assert len(records) == sum(s.one_line for s in SECRETS) + 1
    ledger = json.dumps(records)
    assert [s.kind for s in SECRETS if s.value in ledger] == []
    assert "[REDACTED:github-token]" in ledger
    files = b"".join(p.read_bytes() for p in vault.places.ledger.glob("*.jsonl"))
    assert [s.kind for s in SECRETS if s.value.encode() in files] == []


def test_a_client_name_given_to_the_engine_or_the_cli_is_redacted(vault: Vault, vault_path: Path):
    github = next(s for s in SECRETS if s.kind == "github-token")
    vault.remember(create_args("Written by a client named with a token"), client=github.value)
    done = subprocess.run(
        [sys.executable, "-m", "vault_tool", "remember", "-", "--client", github.value,
         "--vault", str(vault_path)],
        input=(
            "---\nmemory_type: note\nentities:\n- {n: Ana, kind: person, is: engineer}\n"
            "facts:\n- {subject: Ana, predicate: wrote, object: Ana}\n---\n"
            "# A note from the command line\n\nWords.\n"
        ), capture_output=True, text=True,
        env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_nowhere_in_history(vault_path, [github])
