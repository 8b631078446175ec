"""The importers' pure parts: shaping text to the schema, and reading single sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_tool.cli.app import cli
from vault_tool.core.memory import Memory
from vault_tool.ops import importers
from vault_tool.ops.importers import Item, Unusable, prepare, read_source
from vault_tool.ops.importers.items import kind_of, normalize_tag, shorten, snake_case
from vault_tool.ops.transfer import EXPORT_FORMATS


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        ("works_at", "works_at"),
        ("works at", "works_at"),
        ("worksAt", "works_at"),
        ("Is On-Call For", "is_on_call_for"),
        ("2nd reviewer of", "rel_2nd_reviewer_of"),
        ("→", "relates_to"),
    ],
)
def test_relation_types_become_snake_case_predicates(text, predicate):
    assert snake_case(text, "relates_to") == predicate


@pytest.mark.parametrize(
    ("raw", "tag"),
    [
        ("Billing", "billing"),
        ("#Q3 Roadmap", "q3-roadmap"),
        ("infra/payments", "infra/payments"),
        ("Café", "cafe"),
        ("日本", None),
        ("--", None),
    ],
)
def test_tags_are_normalised_to_the_vault_pattern_or_dropped(raw, tag):
    assert normalize_tag(raw) == tag


def test_kinds_are_lowercase_words():
    assert kind_of("Person", "thing") == "person"
    assert kind_of("Tool / Library", "thing") == "tool_library"
    assert kind_of("", "thing") == "thing"
    assert kind_of("3D model", "thing") == "thing_3d_model"


def test_shorten_cuts_long_text_at_a_word_with_an_ellipsis():
    text = "word " * 40
    cut = shorten(text, 120)
    assert len(cut) <= 120 and cut.endswith("word…")
    assert shorten("two\nlines", 120) == "two lines"


def test_prepare_adds_the_missing_h1_and_redacts_the_title():
    token = "ghp_" + "a" * 36
    item = Item("x.md", Memory(memory_type="note", title=f"Token {token}", body="Just text.\n"))
    memory, redactions = prepare(item)
    assert memory.title == "Token [REDACTED:github-token]"
    assert memory.body == "# Token [REDACTED:github-token]\n\nJust text.\n"
    assert [r["field"] for r in redactions] == ["title"]


def test_prepare_refuses_what_the_schema_refuses():
    bad = Memory(memory_type="note", title="T", body="# T\n", tags=("Not A Tag",))
    with pytest.raises(Unusable, match="tags"):
        prepare(Item("x.md", bad))


def test_inline_tags_skip_code_urls_and_wikilink_headings(tmp_path: Path):
    note = tmp_path / "n.md"
    note.write_text(
        "# Title #real\n\nText #one and `#code` and http://x.org/#frag and [[Page#Head]]"
        " and [[#Local]] and #2024 and #y2024.\n\n```\n#fenced\n```\n"
    )
    source = read_source(note, "basic-memory")  # markdown leaves them in the body, as written
    assert list(source.items[0].memory.tags) == ["real", "one", "y2024"]
    assert source.items[0].memory.title == "Title #real"


def test_a_basic_memory_line_with_a_link_but_no_relation_type_is_left_in_the_body(
    tmp_path: Path,
):
    note = tmp_path / "n.md"
    note.write_text("---\ntitle: N\n---\n# N\n\n- [[Other]]\n- [link](http://x.org)\n")
    memory = read_source(note, "basic-memory").items[0].memory
    assert [e.n for e in memory.entities] == ["N"] and memory.facts == ()


def test_cli_format_choices_match_the_importers_and_exporters():
    def choices(command: str) -> tuple[str, ...]:
        option = next(p for p in cli.commands[command].params if p.name == "fmt")
        return tuple(option.type.choices)

    assert choices("import") == importers.FORMATS
    assert choices("export") == EXPORT_FORMATS
