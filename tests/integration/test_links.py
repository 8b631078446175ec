"""Links between notes, in a vault of Obsidian-shaped files: resolution, backlinks, doctor,
ranking, `show`, the MCP text, and an index of the schema before links."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke
from tests.helpers import create_args
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks.checkup import Checkup
from vault_tool.core import schema
from vault_tool.core import text as analysed
from vault_tool.engine.vault import Vault
from vault_tool.search import links, stored
from vault_tool.search.documents import INDEX_SCHEMA_VERSION, whoosh_schema
from vault_tool.search.index import Index
from vault_tool.server import render

PLAN = """\
---
title: Phoenix rollout plan
aliases: [Firebird]
tags: [project]
---
# Phoenix rollout plan

Ship the new checkout in three waves.
"""
OLD_PLAN = "# Old phoenix notes\n\nThe first attempt, abandoned.\n"
ANA = "---\naliases: Ana L.\n---\n# Ana Lima\n\nDesigner on the checkout team.\n"
STANDUP = """\
# Standup 30 November

Talked to [[Ana]] about [[projects/Phoenix|the plan]]; risks in [[Phoenix#Risks]].
![[Firebird]] and [[Ana Lima]] and [[ana l.]]; her page: [notes](../people/Ana.md).
Still to write: [[Nowhere]]. ![[diagram.png]] [site](https://example.com/x.md)
`[[In a code span]]`

```
[[In fenced code]]
```
"""
FILES = {
    "projects/Phoenix.md": PLAN,
    "archive/projects/Phoenix.md": OLD_PLAN,
    "people/Ana.md": ANA,
    "daily/2026-11-30.md": STANDUP,
}


def write(vault: Vault, root: Path, files: dict[str, str]) -> None:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text, encoding="utf-8")
    report = vault.sync_paths(sorted(files), commit=True)
    assert report.problems == {}


def link_map(read: dict) -> dict[str, str | None]:
    return {link["link"]: link.get("memory_id") for link in read["links"]}


def test_wikilinks_and_markdown_links_resolve_by_name_path_title_and_alias(vault, vault_path):
    write(vault, vault_path, FILES)

    read = vault.read("daily/2026-11-30")

    assert link_map(read) == {
        "[[Ana]]": "people/Ana",  # file name
        "[[projects/Phoenix|the plan]]": "projects/Phoenix",  # path (the shorter of two)
        "[[Phoenix#Risks]]": "projects/Phoenix",  # file name shared: shortest path wins
        "![[Firebird]]": "projects/Phoenix",  # alias (a list), embedded
        "[[Ana Lima]]": "people/Ana",  # title
        "[[ana l.]]": "people/Ana",  # alias (one string), any case
        "[notes](../people/Ana.md)": "people/Ana",  # relative Markdown link
        "[[Nowhere]]": None,  # no such note
    }  # not links: the attachment, the web address, code span and fenced code
    ana = next(link for link in read["links"] if link["link"] == "[[Ana]]")
    assert ana == {"link": "[[Ana]]", "memory_id": "people/Ana", "title": "Ana Lima",
                   "path": "people/Ana.md"}  # fmt: skip
    assert read["backlinks"] == []
    assert schema.errors_of(read, "search.output.schema.json") == []


def test_backlinks_are_the_notes_whose_links_resolve_to_it(vault, vault_path):
    write(vault, vault_path, FILES)

    plan = vault.read("projects/Phoenix")
    old = vault.read("archive/projects/Phoenix")

    assert plan["backlinks"] == [
        {"memory_id": "daily/2026-11-30", "title": "Standup 30 November",
         "path": "daily/2026-11-30.md"}
    ]  # fmt: skip
    assert plan["backlink_count"] == 1
    # Its file name is the same, but every link to that name resolved to the shorter path.
    assert old["backlinks"] == [] and old["backlink_count"] == 0
    assert [b["memory_id"] for b in vault.read("people/Ana")["backlinks"]] == ["daily/2026-11-30"]


def test_a_markdown_link_names_the_note_in_its_folder_else_the_one_its_name_finds(
    vault, vault_path
):
    link = "[Ana](Ana.md)"
    write(
        vault,
        vault_path,
        {
            "Ana.md": "# Ana at the root\n",
            "people/Ana.md": ANA,
            "people/team.md": f"# The team\n\n{link}\n",  # (people/Ana.md is beside it)
            "daily/x.md": f"# Day x\n\n{link}\n",  # (no daily/Ana.md: by name)
            "daily/y.md": "# Day y\n\n[[Ana]]\n",
            "people/z.md": "# Z\n\n[[Ana]]\n",  # (a name two notes have: its folder's)
        },
    )

    assert link_map(vault.read("people/team")) == {link: "people/Ana"}
    assert link_map(vault.read("daily/x")) == {link: "Ana"}
    assert link_map(vault.read("people/z")) == {"[[Ana]]": "people/Ana"}
    assert [b["memory_id"] for b in vault.read("people/Ana")["backlinks"]] == [
        "people/team",
        "people/z",
    ]
    assert [b["memory_id"] for b in vault.read("Ana")["backlinks"]] == ["daily/x", "daily/y"]


def test_a_link_to_a_note_written_later_resolves_without_reindexing_the_linking_note(
    vault, vault_path
):
    write(vault, vault_path, {"daily/2026-11-30.md": STANDUP})
    before = vault.at_path("daily/2026-11-30.md")
    assert link_map(vault.read("daily/2026-11-30"))["[[Ana]]"] is None

    write(vault, vault_path, {"people/Ana.md": ANA})

    assert vault.at_path("daily/2026-11-30.md") == before  # (the same indexed document)
    assert link_map(vault.read("daily/2026-11-30"))["[[Ana]]"] == "people/Ana"
    assert [b["memory_id"] for b in vault.read("people/Ana")["backlinks"]] == ["daily/2026-11-30"]


def test_a_tool_written_memory_links_and_is_linked_to_by_its_title(vault, vault_path):
    made = vault.remember(create_args("Ana owns the billing service", "See [[Ana Lima]]."))
    write(vault, vault_path, {"people/Ana.md": ANA})
    linker = "# Billing notes\n\nThe owner: [[Ana owns the billing service]].\n"
    write(vault, vault_path, {"notes/billing.md": linker})

    assert link_map(vault.read(made["memory_id"])) == {"[[Ana Lima]]": "people/Ana"}
    assert [b["memory_id"] for b in vault.read(made["memory_id"])["backlinks"]] == ["notes/billing"]


RANKED = {
    # The linked note's title is not its file name: only resolving the link finds it.
    "projects/phoenix.md": "# Firebird migration plan\n\nMove the shop in waves.\n",
    "notes/weekly.md": "# Weekly sync\n\nWe went through [[phoenix]] and the budget.\n",
    "notes/monthly.md": "# Monthly sync\n\nWe went through the hiring and the budget.\n",
}


def ranked_paths(vault: Vault, query: str) -> list[str]:
    return [h["path"] for h in vault.search({"query": query})["selected_hits"]]


def test_a_query_naming_a_linked_notes_title_ranks_the_linking_note_higher(vault, vault_path):
    write(vault, vault_path, RANKED)
    # Without the link's note in the query, the longer weekly note ranks below the monthly.
    assert ranked_paths(vault, "sync budget") == ["notes/monthly.md", "notes/weekly.md"]

    assert ranked_paths(vault, "firebird migration sync budget") == [
        "projects/phoenix.md",
        "notes/weekly.md",
        "notes/monthly.md",
    ]
    # The text alone does not reach the weekly note: the link to the plan does.
    assert ranked_paths(vault, "firebird migration") == ["projects/phoenix.md", "notes/weekly.md"]
    hits = vault.search({"query": "firebird migration"}, explain=True)["selected_hits"]
    assert hits[1]["score_parts"]["text"] == 0.0 and hits[1]["score_parts"]["entity"] > 0


def test_warming_analyses_every_title_ahead_and_stops_when_a_call_comes_in(
    vault, vault_path, monkeypatch
):
    write(vault, vault_path, FILES)
    titles = vault._index.read(
        lambda s: [stored.fields(s, docnum)["title"] for docnum in s.reader().all_doc_ids()]
    )
    analysed._gloss_words.cache_clear()
    assert vault._index.read(lambda s: links.warm_titles(s, lambda: True)) == 0
    assert analysed._gloss_words.cache_info().currsize == 0

    assert vault._index.read(lambda s: links.warm_titles(s, lambda: False)) == len(FILES)
    before = analysed._gloss_words.cache_info()
    for title in titles:
        analysed.gloss_words(title)
    assert analysed._gloss_words.cache_info().misses == before.misses  # (every one kept)

    monkeypatch.setattr(links, "TITLES_WARMED", 2)
    assert vault._index.read(lambda s: links.warm_titles(s, lambda: False)) == 2
    assert ranked_paths(vault, "firebird") == ["projects/Phoenix.md", "daily/2026-11-30.md"]


def test_filters_choose_the_linking_notes_not_the_notes_they_link_to(vault, vault_path):
    tagged = "---\ntags: [meeting]\n---\n# Weekly sync\n\nWe went through [[phoenix]].\n"
    other = "---\ntags: [project]\n---\n# Hiring sync\n\nWe went through the hiring.\n"
    write(vault, vault_path, {**RANKED, "notes/weekly.md": tagged, "notes/hiring.md": other})

    meetings = vault.search({"query": "firebird migration", "tags": ["meeting"]})
    others = vault.search({"query": "firebird migration", "tags": ["project"]})

    # The plan has no tag meeting, but the weekly note that links to it has.
    assert [h["path"] for h in meetings["selected_hits"]] == ["notes/weekly.md"]
    assert others["selected_hits"] == []  # (the project note does not link to the plan)


def test_doctor_lists_each_unresolved_link_with_its_file_and_escaped_text(vault, vault_path):
    hostile = "# Odd links\n\nSee [[evil\u202ename]] and [[Nowhere]].\n"
    write(vault, vault_path, {**FILES, "notes/odd.md": hostile})
    vault.close()

    with Checkup(vault_path) as checkup:
        report = doctor_module.doctor(checkup)

    check = next(c for c in report.checks if c.name == "links")
    assert check.status == "warn" and report.healthy
    assert sorted((row["path"], row["link"]) for row in check.details) == [
        ("daily/2026-11-30.md", "[[Nowhere]]"),
        ("notes/odd.md", "[[Nowhere]]"),
        ("notes/odd.md", "[[evil\u202ename]]"),
    ]
    reasons = [row["reason"] for row in check.details]
    assert "unresolved link [[evil\\u202ename]]" in reasons
    assert not any("\u202e" in reason for reason in reasons)
    done = invoke("doctor", "--vault", vault_path)
    assert "daily/2026-11-30.md  unresolved link [[Nowhere]]" in done.stdout
    assert "\u202e" not in done.stdout


def test_doctor_is_quiet_about_links_when_every_link_resolves(vault, vault_path):
    write(vault, vault_path, {"people/Ana.md": ANA, "notes/a.md": "# A\n\nSee [[Ana]].\n"})
    vault.close()

    with Checkup(vault_path) as checkup:
        check = next(c for c in doctor_module.doctor(checkup).checks if c.name == "links")

    assert check.status == "ok"


def test_show_lists_the_links_and_backlinks(vault, vault_path):
    write(vault, vault_path, FILES)
    vault.close()

    standup = invoke("show", "daily/2026-11-30", "--vault", vault_path)
    plan = invoke("show", "projects/Phoenix", "--vault", vault_path)
    as_json = json.loads(invoke("show", "projects/Phoenix", "--vault", vault_path, "--json").stdout)

    assert standup.exit_code == 0, standup.stderr
    assert "  [[Ana]]  -> people/Ana  Ana Lima" in standup.stdout
    assert "  [[Nowhere]]  -> (no note has this name)" in standup.stdout
    assert "linked from (1):\n  daily/2026-11-30  Standup 30 November" in plan.stdout
    assert as_json["backlinks"][0]["memory_id"] == "daily/2026-11-30"


def test_the_mcp_text_of_an_addressed_read_names_links_and_backlinks(vault, vault_path):
    write(vault, vault_path, FILES)

    standup = render.search_text(vault.search({"memory_id": "daily/2026-11-30"}))
    plan = render.search_text(vault.search({"memory_id": "projects/Phoenix"}))

    assert "[[Ana]] -> Ana Lima (id people/Ana)" in standup
    assert "[[Nowhere]] (no note has this name)" in standup
    assert "linked from: Standup 30 November (id daily/2026-11-30)" in plan
    # Inside the memory's data block, like its title.
    assert plan.index("linked from:") < plan.index("<<< END")


def test_an_index_of_the_schema_before_links_is_rebuilt_not_crashed_on(vault, vault_path):
    write(vault, vault_path, FILES)
    vault.close()
    # The index as the previous version of the tool made it: no link fields.
    old_schema = whoosh_schema()
    for name in ("names", "link_keys", "links"):
        old_schema.remove(name)
    folder = vault_path / ".vault" / "index"
    for child in folder.iterdir():
        child.unlink()
    from whoosh.filedb.filestore import FileStorage

    FileStorage(str(folder)).create_index(old_schema).close()
    meta = folder / "vault-tool-index.json"
    meta.write_text(json.dumps({"schema_version": INDEX_SCHEMA_VERSION - 1}))

    with Vault.open(vault_path) as reopened:
        assert reopened.read("projects/Phoenix")["backlink_count"] == 1
        assert json.loads(meta.read_text())["schema_version"] == INDEX_SCHEMA_VERSION
    index = Index(vault_path).open()
    try:
        assert {"names", "link_keys", "links"} <= set(index._ix.schema.names())
    finally:
        index.close()
