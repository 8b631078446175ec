"""A person's notes read as memories whatever their shape (core/hand_made.py via parse)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_tool.core import links
from vault_tool.core.hand_made import (
    inline_tags,
    normalize_tags,
    opening_h1,
    tag_name,
    title_of,
)
from vault_tool.core.memory import parse, render
from vault_tool.errors import UnparseableFile


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From the front matter\n---\n## A heading\n", "From the front matter"),
        ("# First-level heading ##\n\ntext\n", "First-level heading"),
        ("## Tasks\n\n- [ ] a\n", "Project Ideas"),  # a lower heading is a section's
        ("Some words first.\n\n## A section\n", "Project Ideas"),
        ("Setext title\n============\n\nbody\n", "Setext title"),
        ("```\n# not a heading\n```\n\nbody\n", "Project Ideas"),
        ("no heading at all\n", "Project Ideas"),
        ("---\ntitle: 2024\n---\ntext\n", "2024"),
        ("---\ntitle: ''\n---\n# Deep\n", "Deep"),
    ],
)
def test_a_title_comes_from_front_matter_then_the_opening_h1_then_the_file_name(text, title):
    assert parse(text, "projects/Project Ideas.md").title == title


def test_type_comes_from_memory_type_then_type_then_note():
    assert parse("---\nmemory_type: gotcha\ntype: rule\n---\nx\n", "a.md").memory_type == "gotcha"
    assert parse("---\ntype: decision\n---\nx\n", "a.md").memory_type == "decision"
    assert parse("---\ntype: project\n---\nx\n", "a.md").memory_type == "note"


@pytest.mark.parametrize(
    ("value", "tags"),
    [
        ("Reading, Books", ["reading", "books"]),
        ("reading books", ["reading", "books"]),
        (
            ["#Project/Alpha", "Deep Work", "café", "deep-work", 7, None],
            ["project/alpha", "deep-work", "cafe", "7"],
        ),
        ([], []),
        (42, []),
    ],
)
def test_tags_may_be_a_list_or_one_string_in_any_case(value, tags):
    assert normalize_tags(value) == tags


def test_inline_tags_are_found_outside_code_and_urls():
    body = (
        "# Title #inheading\n"
        "Met #Ana-team about #project/alpha, and #2024 is a year.\n"
        "See http://example.com/#fragment and a#b and `#code`.\n"
        "```\n#not-a-tag\n```\n"
        "[[#Local]] [[Page#Head]] &#1; (#paren) last #ana-team\n"
    )
    assert inline_tags(body) == ("inheading", "ana-team", "project/alpha")


# A tag's `#` starts the text or follows whitespace (any Unicode whitespace, as regex's \s).
_REFERENCE = re.compile(r"(?:^|(?<=\s))#([\w/-]*[^\W\d][\w/-]*)", re.MULTILINE)


@given(st.text(alphabet=" \n\t#a1_/-é\u00a0\u2028\u3000x.[`", max_size=40))
def test_inline_tags_are_those_whose_hash_starts_the_text_or_follows_whitespace(body: str):
    found: list[str] = []
    for match in _REFERENCE.finditer(links.prose(body)):
        tag = tag_name(match.group(1))
        if tag and tag not in found:
            found.append(tag)
    assert inline_tags(body) == tuple(found)


def test_a_persons_odd_values_of_our_keys_are_kept_in_the_file_as_written():
    text = (
        "---\nid: 20240105093000\nstatus: draft\ncreated: last spring\n"
        "aliases: [Ideas]\ntags: Idea\n---\nbody #later\n"
    )
    memory = parse(text, "Ideas.md")
    assert memory.id is None  # addressed by its path, not by a number
    assert (memory.status, memory.created, memory.tags) == ("active", None, ("idea",))
    assert memory.inline_tags == ("later",)
    assert memory.extra == {
        "aliases": ["Ideas"],
        "id": 20240105093000,
        "status": "draft",
        "created": "last spring",
    }
    rendered = render(memory)  # what a tool update would write keeps every value
    for line in ("id: 20240105093000", "status: draft", "created: last spring", "- Ideas"):
        assert line in rendered
    assert "later" not in rendered.split("---\n")[1]  # inline tags stay in the text only


def test_the_structure_of_a_memory_is_still_held_to_the_schema_with_its_line():
    with pytest.raises(UnparseableFile) as caught:
        parse("---\ntitle: T\nfacts: nope\n---\nx\n", "a.md")
    assert caught.value.line == 3


def test_only_an_h1_the_note_opens_with_is_its_title():
    assert opening_h1("\n\n# Deep\n") == "Deep" and opening_h1("Deep\n===\n") == "Deep"
    assert opening_h1("## Tasks\n- [ ] a\n") is None and opening_h1("Tasks\n---\n") is None
    assert title_of("## Tasks\n\n- [ ] call Lena\n", "Daily/2026-12-01.md") == "2026-12-01"
    assert opening_h1("~~~\n# in code\n~~~\n") is None
    assert opening_h1("\n---\n\ntext\n") is None
    assert opening_h1("text\n\n# Later\n") is None  # a section's, after the first text


@pytest.mark.parametrize("text", ["", "\n\n", "  \t\n", "\ufeff\n"])
def test_an_empty_file_is_not_a_memory(text):
    # Most often an editor's save caught half-way: taking it in would commit a deletion.
    with pytest.raises(UnparseableFile, match="empty"):
        parse(text, "notes/n.md")


@pytest.mark.timeout(30)  # a bound on a hang, not a speed: the linear reading takes ms
def test_a_hostile_heading_line_is_read_in_linear_time():
    # A pattern for the closing #s backtracked on a long line of spaces (minutes at 100k).
    text = "# a" + " " * 100_000 + "b\n\nbody\n"
    assert parse(text, "notes/n.md").title == "a b"
    assert opening_h1("# T ##\n") == "T" and opening_h1("# a # b #\n") == "a # b"
