"""What a project-limited token's answers name: the memories of its projects and nothing
else. Every id, title and path a call returns (links, backlinks, similar memories, an
exact repeat, a rule's evidence) is filtered by the token's projects, and a call that would
reach another project's memory through remember (supersedes, a key it holds) is refused as
a memory_id of another project is. Driven over HTTP with the SDK's client, as a token is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import HttpServer, anyio_backend, call, http_session  # noqa: F401
from tests.e2e.test_mcp_http import bearer
from tests.e2e.test_mcp_tokens import make
from tests.helpers import create_args
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio

BLOG_TITLE = "Ana owns the blog engine"
BLOG_BODY = "She took it over from Bo."
SHOP_TITLE = "Shop checkout flow"


def _in(project: str, title: str, body: str, **extra: Any) -> dict[str, Any]:
    args = create_args(title, body, **extra)
    args["semantic_delta"]["project"] = project
    return args


def _item(*args: Any, **extra: Any) -> dict[str, Any]:
    """One item of a batch create (its fields, without the mode)."""
    return {k: v for k, v in create_args(*args, **extra).items() if k != "mode"}


def _blog_and_shop(vault_path: Path) -> dict[str, Any]:
    """A blog memory that a shop memory links to, a blog memory that links to the shop one
    (a backlink), and a rule for every project resting on the blog memory."""
    with Vault.open(vault_path) as vault:
        blog = vault.remember(_in("blog", BLOG_TITLE, BLOG_BODY, key="blog-owner"))
        shop = vault.remember(_in("shop", SHOP_TITLE, f"Payments first; see [[{BLOG_TITLE}]]."))
        replacing = [shop["memory_id"]]  # (a blog memory that replaces the shop one)
        linking = vault.remember(
            _in("blog", "Blog deploys", f"Unlike [[{SHOP_TITLE}]].", supersedes=replacing)
        )
        vault.rules.add("Ask Ana first", evidence=[blog["memory_id"]], client="pytest")
    return {"blog": blog, "shop": shop, "linking": linking}


def _names(answer: Any, *memories: dict[str, Any]) -> list[str]:
    """The ids, titles and paths of these memories that an answer holds anywhere."""
    dumped = json.dumps(answer.structured_content, ensure_ascii=False)
    said = [m["memory_id"] for m in memories] + [m["path"] for m in memories]
    return [s for s in said if s in dumped]


async def test_a_project_token_reads_no_other_projects_ids_titles_or_paths(
    vault_path: Path,
) -> None:
    made = _blog_and_shop(vault_path)
    blog, shop, linking = made["blog"], made["shop"], made["linking"]
    with Vault.open(vault_path) as vault:  # (the rule's evidence changes: a re-check names it)
        tagged = _in("blog", BLOG_TITLE, BLOG_BODY, key="blog-owner", tags=["blog"])
        vault.remember({**tagged, "mode": "update", "memory_id": blog["memory_id"],
                        "expected_version_id": blog["version_id"]})  # fmt: skip
    secret = make(vault_path, "shop-agent", "--scope", "write", "--project", "shop")
    repeat = create_args(BLOG_TITLE, BLOG_BODY)  # the blog memory's very words
    near = create_args(BLOG_TITLE, "Bo handed it to her in May.")
    with HttpServer(vault_path, "--tools", "extended") as server:
        async with http_session(server.url, bearer(secret)) as session:
            read = await call(session, "search", {"memory_id": shop["memory_id"]})
            read_many = await call(session, "read", {"memory_ids": [shop["memory_id"]]})
            repeated = await call(session, "remember", repeat)
            similar = await call(session, "remember", near)
            batch = await call(session, "remember", {"mode": "create", "items": [
                _item("Checkout retries", "Three times."),
                _item(BLOG_TITLE, "Ana, since May."),
            ]})  # fmt: skip
            rules = await call(session, "list_rules", {})
            found = await call(session, "search", {"query": SHOP_TITLE})
            context = await call(session, "session_context", {})
    for answer in (read, read_many, repeated, similar, batch, rules, found, context):
        assert not answer.is_error, answer.structured_content
        assert _names(answer, blog, linking) == [], answer.structured_content
    # The link stays as the memory's own words; it resolves to nothing the token may reach.
    assert read.structured_content["links"] == [{"link": f"[[{BLOG_TITLE}]]"}]
    assert read.structured_content["backlinks"] == []
    assert read.structured_content["backlink_count"] == 0
    # An exact repeat of another project's memory is a new memory of the token's project.
    assert repeated.structured_content["status"] == "created"
    made_path = vault_path / repeated.structured_content["path"]
    assert "project: shop\n" in made_path.read_text()
    # (the shop memory states the same fact as these words' default one: similar too)
    assert [s["memory_id"] for s in similar.structured_content["similar"]] == [
        repeated.structured_content["memory_id"],
        shop["memory_id"],
    ]
    [rule] = rules.structured_content["rules"]
    assert rule["evidence_memory_ids"] == []
    assert rule["recheck"] == "a memory of another project changed since it was confirmed"
    hits = found.structured_content["selected_hits"]
    assert shop["memory_id"] in [h["memory_id"] for h in hits]
    assert all("superseded_by" not in h for h in hits)  # (its replacement is the blog's)


async def test_a_project_token_may_not_supersede_or_take_the_key_of_another_projects_memory(
    vault_path: Path,
) -> None:
    made = _blog_and_shop(vault_path)
    blog = made["blog"]
    secret = make(vault_path, "shop-agent", "--scope", "write", "--project", "shop")
    replacing = create_args("Bo owns the blog engine again", supersedes=[blog["memory_id"]])
    keyed = create_args("Who owns what", key="blog-owner")
    in_batch = {"mode": "create", "items": [
        _item("Checkout owner"), _item("Bo owns it", supersedes=[blog["memory_id"]]),
    ]}  # fmt: skip
    with HttpServer(vault_path, "--tools", "extended") as server:
        async with http_session(server.url, bearer(secret)) as session:
            superseding = await call(session, "remember", replacing)
            batched = await call(session, "remember", in_batch)
            taken = await call(session, "remember", keyed)
    for refused, field in (
        (superseding, "semantic_delta.supersedes[0]"),
        (batched, "items[1].semantic_delta.supersedes[0]"),
        (taken, "semantic_delta.key"),
    ):
        assert refused.is_error, refused.structured_content
        error = refused.structured_content["error"]
        assert error["code"] == "forbidden" and error["message"].startswith(f"{field}: ")
        assert "in project 'blog'" in error["message"]
        assert blog["path"] not in error["message"], error  # (an id it sent is named back)
    assert blog["memory_id"] not in json.dumps(taken.structured_content)
    with Vault.open(vault_path) as vault:
        assert vault.count() == 4  # nothing was written
    superseding = [
        path.name
        for path in vault_path.rglob("*.md")
        if ".vault" not in path.parts and path.name != "README.md"
        and blog["memory_id"] in parse(path.read_text(), path.name).supersedes
    ]  # fmt: skip
    assert superseding == []  # (the blog memory's facts stay in its project's context)
