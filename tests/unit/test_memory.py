"""The memory file format: parse and render, pure and byte-exact."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vault_tool.core import schema
from vault_tool.core.memory import KEY_ORDER, Entity, Fact, Memory, first_h1, parse, render
from vault_tool.errors import UnparseableFile

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample-vault"
SAMPLE_FILES = sorted(
    p.relative_to(SAMPLE_VAULT).as_posix()
    for p in SAMPLE_VAULT.rglob("*.md")
    if p.name != "README.md"
)

TOOL_FILE = """\
---
id: 01JDXK3M6Q8W1J4T0P9R7V2B5C
memory_type: decision
title: Ana owns the billing service
key: billing.owner
project: billing-api
status: dismissed
pinned: true
entities:
  - n: Ana
    kind: person
    is: backend engineer on my team
  - n: billing service
    kind: service
    is: the service that issues invoices
facts:
  - subject: Ana
    predicate: owns
    object: billing service
    valid_from: 2026-01-01
    valid_until: 2026-12-31
tags:
  - billing
  - ownership
supersedes:
  - 01JDXK3M6Q8W1J4T0P9R7V2B5D
expires_at: 2027-01-01T00:00:00Z
source: claude-code
created: 2026-11-29T19:46:45Z
updated: 2026-11-30T08:00:00Z
---
# Ana owns the billing service

Ana took it over after the payments team split.
"""


def _memory(**changes: object) -> Memory:
    base = Memory(
        id="01JDXK3M6Q8W1J4T0P9R7V2B5C",
        memory_type="decision",
        title="Ana owns the billing service",
        body="# Ana owns the billing service\n\nShe took it over.\n",
        entities=(
            Entity("Ana", "person", "backend engineer"),
            Entity("billing service", "service", "issues invoices"),
        ),
        facts=(Fact("Ana", "owns", "billing service"),),
        tags=("billing",),
        source="pytest",
        created="2026-11-29T19:46:45Z",
        updated="2026-11-29T19:46:45Z",
    )
    return base.with_changes(**changes)


def _front_matter_keys(text: str) -> list[str]:
    front = text.split("---\n", 2)[1]
    return re.findall(r"^([a-z_]+):", front, re.MULTILINE)


# --- round trip ----------------------------------------------------------------------------


def test_the_sample_vault_is_not_empty():
    assert len(SAMPLE_FILES) == 28


@pytest.mark.parametrize("relpath", SAMPLE_FILES)
def test_sample_file_round_trips_byte_for_byte(relpath: str):
    text = (SAMPLE_VAULT / relpath).read_bytes().decode("utf-8")
    memory = parse(text, relpath)
    assert memory.id and memory.has_front_matter
    assert render(memory).encode("utf-8") == text.encode("utf-8")


def test_a_file_with_every_optional_field_round_trips_byte_for_byte():
    memory = parse(TOOL_FILE, "decision/x.md")
    assert memory.key == "billing.owner"
    assert memory.status == "dismissed"
    assert memory.pinned is True
    assert memory.facts[0].valid_from == "2026-01-01"
    assert memory.supersedes == ("01JDXK3M6Q8W1J4T0P9R7V2B5D",)
    assert render(memory) == TOOL_FILE


def test_rendering_what_was_parsed_from_a_rendered_memory_changes_nothing():
    once = render(_memory())
    assert render(parse(once, "x.md")) == once


# --- render conventions --------------------------------------------------------------------


def test_render_writes_keys_in_the_fixed_order_whatever_order_they_were_given():
    memory = parse(TOOL_FILE, "x.md")
    keys = _front_matter_keys(render(memory))
    assert keys == [k for k in KEY_ORDER if k in keys]
    assert keys == list(KEY_ORDER)


def test_render_writes_block_lists_lf_and_exactly_one_trailing_newline():
    memory = _memory(
        body="\r\n\r\n# Ana owns the billing service\r\n\r\nShe took it over.\r\n\r\n\r\n",
        tags=("billing", "ownership"),
    )
    text = render(memory)
    assert "\r" not in text
    assert text.endswith("She took it over.\n")
    assert not text.endswith("\n\n")
    assert "\n---\n# Ana owns the billing service\n" in text
    assert "tags:\n  - billing\n  - ownership\n" in text
    assert "entities:\n  - n: Ana\n    kind: person\n    is: backend engineer\n" in text
    assert "[" not in text.split("---\n", 2)[1]
    assert "{" not in text.split("---\n", 2)[1]


def test_render_omits_defaults_and_unset_optional_fields():
    text = render(_memory())
    keys = _front_matter_keys(text)
    for absent in ("key", "status", "pinned", "supersedes", "expires_at"):
        assert absent not in keys


def test_render_keeps_a_long_title_on_one_line():
    title = "A very long title " * 12
    text = render(_memory(title=title.strip()))
    assert f"title: {title.strip()}\n" in text


def test_render_writes_non_ascii_as_utf8_not_escapes():
    text = render(_memory(title="Zoë owns the café"))
    assert "title: Zoë owns the café\n" in text


# --- hand-made files -----------------------------------------------------------------------


def test_file_without_front_matter_is_a_note_titled_by_its_h1():
    memory = parse("# Wombats\n\nThey dig burrows.\n", "notes/wombat.md")
    assert memory.memory_type == "note"
    assert memory.title == "Wombats"
    assert memory.id is None
    assert memory.has_front_matter is False
    assert memory.body == "# Wombats\n\nThey dig burrows.\n"


def test_setext_h1_is_an_h1():
    memory = parse("Wombats\n=======\n\nThey dig burrows.\n", "notes/wombat.md")
    assert memory.title == "Wombats"


def test_front_matter_without_title_takes_the_title_from_the_h1():
    memory = parse("---\nmemory_type: gotcha\n---\n# Staging needs the VPN\n", "g.md")
    assert memory.memory_type == "gotcha"
    assert memory.title == "Staging needs the VPN"


def test_hash_line_inside_a_fenced_code_block_is_not_a_heading():
    memory = parse("```\n# x\n```\n\nSome text.\n", "notes/code.md")
    assert memory.title == "code"  # the file name, as the person's editor shows it


def test_a_file_held_to_the_tool_contract_needs_an_h1_and_says_at_which_line():
    text = "---\nmemory_type: note\ntitle: T\n---\n```\n# x\n```\n"
    assert parse(text, "notes/code.md").title == "T"
    with pytest.raises(UnparseableFile) as caught:
        parse(text, "notes/code.md", strict=True)
    assert caught.value.line == 5
    assert caught.value.path == "notes/code.md"
    assert "notes/code.md:5" in caught.value.message
    assert "#" in caught.value.hint


def test_body_without_any_heading_is_titled_by_its_file_name():
    memory = parse("just some words\n", "notes/Plain words.md")
    assert (memory.title, memory.memory_type, memory.has_front_matter) == (
        "Plain words",
        "note",
        False,
    )


# --- broken YAML ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # line 3 holds "title: T: x": a second ': ' inside a plain value.
        ("---\nmemory_type: note\ntitle: T: x\ntags: [a]\n---\n# T\n", 3),
        # line 4 holds a tab where indentation is expected.
        ("---\nmemory_type: note\ntitle: T\n\tpinned: true\n---\n# T\n", 4),
        # line 6 is indented by 3 under a list item indented by 2 (mapping at 4).
        ("---\nmemory_type: note\ntitle: T\nentities:\n  - n: Ana\n   kind: x\n---\n# T\n", 6),
    ],
    ids=["colon-in-value", "tab", "bad-indent"],
)
def test_bad_yaml_is_unparseable_at_the_line_that_holds_the_error(text: str, line: int):
    with pytest.raises(UnparseableFile) as caught:
        parse(text, "notes/broken.md")
    assert caught.value.line == line
    assert "YAML" in caught.value.reason
    assert caught.value.hint


def test_schema_problem_in_front_matter_is_reported_at_the_key_line():
    text = "---\nmemory_type: note\ntitle: T\npinned: maybe\n---\n# T\n"
    with pytest.raises(UnparseableFile) as caught:
        parse(text, "notes/p.md")
    assert caught.value.line == 4
    assert "pinned" in caught.value.reason


def test_unknown_memory_type_in_a_tool_made_file_lists_the_allowed_types():
    text = "---\nid: 01J00000000000000000000000\nmemory_type: wish\ntitle: T\n---\n# T\n"
    with pytest.raises(UnparseableFile) as caught:
        parse(text, "notes/w.md")
    assert caught.value.line == 3
    assert "decision" in caught.value.hint and "gotcha" in caught.value.hint


def test_unknown_memory_type_in_a_persons_note_makes_it_a_note_and_stays_in_the_file():
    text = "---\nmemory_type: wish\ntitle: T\n---\n# T\n"
    memory = parse(text, "notes/w.md")
    assert memory.memory_type == "note"
    assert memory.extra["memory_type"] == "wish"


def test_unclosed_front_matter_is_unparseable_at_line_1():
    with pytest.raises(UnparseableFile) as caught:
        parse("---\nmemory_type: note\n# T\n", "notes/open.md")
    assert caught.value.line == 1


def test_front_matter_that_is_not_a_mapping_is_unparseable():
    with pytest.raises(UnparseableFile) as caught:
        parse("---\n- a\n- b\n---\n# T\n", "notes/list.md")
    assert "mapping" in caught.value.reason


def test_yaml_anchors_and_aliases_are_refused():
    text = "---\nmemory_type: note\ntitle: &t Wombats\naliases:\n  - *t\n---\n# Wombats\n"
    with pytest.raises(UnparseableFile) as caught:
        parse(text, "notes/alias.md")
    assert "alias" in caught.value.reason


def test_billion_laughs_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = "---\n" + "\n".join(lines) + "\n---\n# T\n"
    with pytest.raises(UnparseableFile):
        parse(text, "notes/laughs.md")


def test_deeply_nested_front_matter_is_refused():
    nested = "[" * 40 + "]" * 40
    with pytest.raises(UnparseableFile) as caught:
        parse(f"---\nmemory_type: note\nx: {nested}\n---\n# T\n", "notes/deep.md")
    assert "nested" in caught.value.reason


def test_oversized_file_is_refused():
    with pytest.raises(UnparseableFile) as caught:
        parse("# T\n\n" + "x" * 1_000_001, "notes/huge.md")
    assert "too large" in caught.value.reason


# --- values --------------------------------------------------------------------------------


def test_dates_and_times_stay_strings_exactly_as_written():
    text = (
        "---\nmemory_type: event\ntitle: Freeze\n"
        "created: 2026-11-29T19:46:45Z\nupdated: 2026-11-30\n"
        "due: 2026-12-20\n---\n# Freeze\n"
    )
    memory = parse(text, "event/f.md")
    assert memory.created == "2026-11-29T19:46:45Z"
    assert memory.updated == "2026-11-30"
    assert memory.extra == {"due": "2026-12-20"}
    assert isinstance(memory.extra["due"], str)
    assert "due: 2026-12-20\n" in render(memory)


def test_foreign_keys_are_kept_in_their_order_after_the_known_keys():
    text = (
        "---\naliases: [Wombat, Vombatus]\nmemory_type: note\ncssclasses:\n  - wide\n"
        "title: Wombats\nzz_plugin: {a: 1}\n---\n# Wombats\n\nThey dig.\n"
    )
    memory = parse(text, "notes/wombat.md")
    assert list(memory.extra) == ["aliases", "cssclasses", "zz_plugin"]
    rendered = render(memory)
    keys = _front_matter_keys(rendered)
    assert keys[-3:] == ["aliases", "cssclasses", "zz_plugin"]
    again = parse(rendered, "notes/wombat.md")
    assert again.extra == {
        "aliases": ["Wombat", "Vombatus"],
        "cssclasses": ["wide"],
        "zz_plugin": {"a": 1},
    }
    assert list(again.extra) == ["aliases", "cssclasses", "zz_plugin"]


def test_crlf_file_parses_like_its_lf_twin():
    lf = "---\nmemory_type: note\ntitle: T\n---\n# T\n\nbody\n"
    assert parse(lf.replace("\n", "\r\n"), "a.md") == parse(lf, "a.md")


# Any title, name or gloss the schema accepts (one line, no control characters).
_ONE_LINE_PATTERN = re.compile(schema.load("memory.schema.json")["$defs"]["title"]["pattern"])
_ONE_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40
).filter(lambda s: _ONE_LINE_PATTERN.fullmatch(s) is not None)


@settings(max_examples=150, deadline=None)
@given(text=_ONE_LINE)
@example(text="12:30")
@example(text="2026-01-01")
@example(text="yes")
@example(text="null")
@example(text="# not a comment")
@example(text="- not a list")
@example(text="&anchor *alias !tag")
@example(text="k: v")
@example(text=" leading and trailing ")
@example(text="zero\u200bwidth \ufeffbom")
def test_any_one_line_text_the_schema_accepts_survives_render_and_parse(text: str):
    memory = _memory(
        title=text,
        entities=(Entity(text, "person", text),),
        facts=(Fact(text, "is", text),),
    )
    back = parse(render(memory), "x.md")
    assert back.title == text
    assert back.entities == memory.entities
    assert back.facts == memory.facts


# --- first_h1 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("# Title\n", "Title"),
        ("# Title\n\nMore.\n", "Title"),
        ("#   Spaced out   \n", "Spaced out"),
        ("# Closed #\n", "Closed"),
        ("  # Indented two\n", "Indented two"),
        ("\n\n# After blank lines\n", "After blank lines"),
        ("Setext\n======\n", "Setext"),
        ("#NoSpace\n", None),
        ("## Second level\n", None),
        ("    # Indented code\n", None),
        ("```\n# in a fence\n```\n", None),
        ("~~~\n# in a tilde fence\n", None),
        ("Setext two\n------\n", None),
        ("text first\n\n# Title\n", None),
        ("<!-- comment -->\n# Title\n", None),
        ("#\n", None),
        ("", None),
    ],
)
def test_first_h1(body: str, expected: str | None):
    assert first_h1(body) == expected


@pytest.mark.parametrize(
    "text",
    [
        "\ufeff---\nid: 01JB8ZJ0A5G2T4M6P8R0S2U4W6\nmemory_type: note\ntitle: Kept\n---\n# Kept\n",
        "\ufeff# A plain note\n\nNo front matter.\n",
    ],
)
def test_a_byte_order_mark_is_accepted_and_rendered_back(text: str):
    memory = parse(text, "notes/bom.md")

    assert memory.bom
    assert memory.title in ("Kept", "A plain note")
    assert render(memory).startswith("\ufeff---\n")
    assert not render(memory.with_changes(bom=False)).startswith("\ufeff")
