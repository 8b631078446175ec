"""Commit messages: one template per kind of change, held to docs/history.md; bodies, trailers,
escaping; and the content rule that pairs the two ends of a move of a file without an id."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from vault_tool.core import changelog
from vault_tool.core.memory import parse
from vault_tool.core.moves import SIMILAR, find_moves, similarity
from vault_tool.engine.hand_edits import Checked

DOCS = Path(__file__).parents[2] / "docs"
ROOT = Path(__file__).parents[2] / "vault_tool"


def test_history_doc_lists_every_template():
    text = (DOCS / "history.md").read_text(encoding="utf-8")
    assert changelog.with_reference(text) == text, (
        "docs/history.md is stale: run `python -m vault_tool.core.changelog docs/history.md`"
    )
    for template, _ in changelog.TEMPLATES.values():
        assert f"| `{template}` |" in text


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no commit-subjects block"):
        changelog.with_reference("# History\n")


def test_no_module_writes_a_subject_of_its_own():
    # A subject composed elsewhere (an f-string, a `git commit -m` argument opening with a
    # template's fixed words) would drift from docs/history.md.
    openings = {t.split("{")[0] for t, _ in changelog.TEMPLATES.values()}
    found = []
    for path in ROOT.rglob("*.py"):
        if path.name == "changelog.py":
            continue
        text = path.read_text(encoding="utf-8")
        for opening in openings:
            if re.search(r'(f"|"-m", ")' + re.escape(opening), text):
                found.append(f"{path.relative_to(ROOT)}: {opening!r}")
    assert found == []


def test_a_batch_lists_each_memory_and_one_named_memory_is_not_listed():
    a = changelog.Entry("decision", "Ana owns billing", "01A")
    b = changelog.Entry("gotcha", "Staging needs the VPN", "01B")
    message = changelog.created([a, b], "pytest")
    assert message == (
        "Create 2 memories\n\n"
        "- decision: Ana owns billing (01A)\n- gotcha: Staging needs the VPN (01B)\n\n"
        "Memory-Id: 01A\nMemory-Id: 01B\nClient: pytest\n"
    )
    assert changelog.created([a], "pytest") == (
        "Create decision: Ana owns billing\n\nMemory-Id: 01A\nClient: pytest\n"
    )
    expired = changelog.about(changelog.subject("expire", memories="1 memory"), [a], "cli")
    assert "\n\n- decision: Ana owns billing (01A)\n\n" in expired


def test_a_move_carries_where_the_file_was():
    of = changelog.Entry("note", "Wombats", "animals/wombats")
    assert changelog.moved(of, "notes/w.md", "animals/wombats.md", "hand-edit") == (
        "Move note: Wombats (notes/w.md -> animals/wombats.md)\n\n"
        "Memory-Id: animals/wombats\nMoved-From: notes/w.md\nClient: hand-edit\n"
    )


def test_a_title_cannot_end_the_subject_or_forge_a_trailer():
    evil = changelog.Entry("note", "Nice\n\nMemory-Id: 01STOLEN\u202e", "notes/n")
    message = changelog.one("update", evil, "pytest")
    subject, body = message.split("\n\n")
    assert subject == "Update note: Nice\\n\\nMemory-Id: 01STOLEN\\u202e"
    assert body == "Memory-Id: notes/n\nClient: pytest\n"


def test_an_unparseable_deleted_file_is_named_by_its_path():
    assert changelog.entry_of_file(b"---\ntitle: [x\n---\n", "notes/x.md") == changelog.Entry(
        "file", "notes/x.md", "notes/x"
    )


def _lines(n: int, changed: int = -1) -> bytes:
    return "".join(
        f"Line {i} {'was changed here' if i == changed else 'about wombats'}.\n" for i in range(n)
    ).encode()


def test_similarity_counts_shared_bytes_as_git_does():
    assert similarity(_lines(30), _lines(30)) == 1.0
    assert similarity(_lines(30), _lines(30, changed=7)) > SIMILAR
    assert similarity(_lines(30), _lines(3)) == 0.0  # the sizes alone rule it out
    assert similarity(b"a" * 1000, b"b" * 1000) == 0.0
    assert similarity(b"", b"") == 1.0


def _gone(path: str, data: bytes) -> Checked:
    memory = parse(data.decode(), path)
    was = changelog.entry(memory, path)
    return Checked(was.memory_id, None, None, None, was, data, memory.id is not None)


def _new(path: str, data: bytes) -> Checked:
    memory = parse(data.decode(), path)
    return Checked(memory.id or path[:-3], memory, data, os.stat(__file__), new=True)


NOTE = "---\ntitle: Wombats\n{id}---\n# Wombats\n\n"


def test_moves_pair_by_id_then_by_content_never_two_declared_ids():
    body = _lines(20)
    with_id = (NOTE.format(id="id: 01HZZZZZZZZZZZZZZZZZZZZZZZ\n")).encode() + body
    other_id = (NOTE.format(id="id: 01HYYYYYYYYYYYYYYYYYYYYYYY\n")).encode() + body
    plain = NOTE.format(id="").encode() + body
    assert find_moves(
        {"a.md": _gone("a.md", with_id), "b.md": _new("b.md", with_id + b"x\n" * 50)}
    ) == {"a.md": "b.md"}
    assert find_moves({"a.md": _gone("a.md", with_id), "b.md": _new("b.md", other_id)}) == {}
    assert find_moves({"a.md": _gone("a.md", plain), "b.md": _new("b.md", plain)}) == {
        "a.md": "b.md"
    }
    unrelated = NOTE.format(id="").encode() + _lines(20, changed=3).replace(b"wombats", b"otters")
    assert find_moves({"a.md": _gone("a.md", plain), "b.md": _new("b.md", unrelated)}) == {}


def test_a_title_found_inside_a_count_subject_still_gets_listed():
    short = changelog.Entry("note", "e", "notes/e")
    assert "\n- note: e (notes/e)\n" in changelog.about("Expire 1 memory", [short], "cli")
    named = changelog.about("Dismiss note: e", [short], "cli")
    assert "- note" not in named
