"""Links as Obsidian writes them: what is a link, and which note a link names."""

from __future__ import annotations

import pytest

from vault_tool.core import links
from vault_tool.core.links import Link


def targets(body: str) -> list[tuple[str, str, bool]]:
    return [(link.text, link.target, link.markdown) for link in links.extract(body)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[[note]]", [("[[note]]", "note", False)]),
        ("[[note|the label]]", [("[[note|the label]]", "note", False)]),
        ("[[note#Heading|x]]", [("[[note#Heading|x]]", "note", False)]),
        ("[[note#^block-id]]", [("[[note#^block-id]]", "note", False)]),
        ("[[folder/sub/note.md]]", [("[[folder/sub/note.md]]", "folder/sub/note", False)]),
        ("![[embedded note]]", [("![[embedded note]]", "embedded note", False)]),
        ("| [[note\\|label]] |", [("[[note\\|label]]", "note", False)]),  # (in a table)
        ("[x](../other/my%20note.md)", [("[x](../other/my%20note.md)", "../other/my note", True)]),
        (
            "[x](<with space.md#part> 'a title')",
            [("[x](<with space.md#part> 'a title')", "with space", True)],
        ),
        ("[x](note)", [("[x](note)", "note", True)]),
    ],
)
def test_each_form_of_link_names_its_target(body, expected):
    assert targets(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "[[#A heading of this note]]",
        "[x](#a-heading)",
        "[web](https://example.com/note.md)",
        "[mail](mailto:ana@example.com)",
        "[app](obsidian://open?vault=x&file=y)",
        "[folder](notes/)",
        "`[[in a span]]`",
        "``a `[[nested]]` span``",
        "```\n[[fenced]]\n```",
        "~~~~\n```\n[[still fenced]]\n~~~\n~~~~",
        "```python\n[[never closed]]\n",
        "a [[broken\nlink]]",
    ],
)
def test_what_is_not_a_link_to_another_note(body):
    assert targets(body) == []


def test_a_fence_closes_only_on_its_own_kind_and_length_and_text_after_is_read():
    body = "````\n```\n[[inside]]\n````\n[[after]]\n"
    assert targets(body) == [("[[after]]", "after", False)]


def test_links_come_in_order_of_appearance_each_once():
    body = "[b](b.md) then [[a]], [[a]] again, and [[c|C]]"
    assert [link.text for link in links.extract(body)] == ["[b](b.md)", "[[a]]", "[[c|C]]"]


def test_an_attachment_looks_like_a_file_and_a_dotted_name_does_not():
    shapes = {link.target: link.looks_like_file for link in links.extract(
        "![[diagram.png]] [[report.pdf]] ![x](img/photo.JPG) [[v1.2]] [[Release 2.0 notes]]"
    )}  # fmt: skip
    assert shapes == {
        "diagram.png": True,
        "report.pdf": True,
        "img/photo.JPG": True,
        "v1.2": False,
        "Release 2.0 notes": False,
    }


NOTES = {
    "Ana.md": ("Ana Lima", ["Ana L."]),
    "people/Ana.md": ("Ana in people", []),
    "people/team/Ana.md": ("Ana deep", []),
    "zz/Ana.md": ("Ana in zz", []),
    "projects/Phoenix.md": ("Phoenix rollout plan", "Firebird"),
    "archive/projects/Phoenix.md": ("Old phoenix", []),
    "v1.2.md": ("Version one point two", []),
    "CI/CD.md": ("Pipelines", []),
}


def lookup(name: str) -> list[str]:
    return [
        path
        for path, (title, aliases) in NOTES.items()
        if name in links.names_of(path, title, links.alias_list(aliases))
    ]


def resolved(target: str, source: str = "daily/today.md", markdown: bool = False) -> str | None:
    return links.resolve(Link(target, target, markdown), source, lookup)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("ana", "Ana.md"),  # a name several files share: the shortest path
        ("people/Ana", "people/Ana.md"),  # a path: the note it is
        ("team/ana", "people/team/Ana.md"),  # ... or the end of one
        ("projects/Phoenix", "projects/Phoenix.md"),  # both end so: the shorter
        ("phoenix rollout plan", "projects/Phoenix.md"),  # a title
        ("FIREBIRD", "projects/Phoenix.md"),  # an alias (one string), any case
        ("ana l.", "Ana.md"),  # an alias of a list
        ("v1.2", "v1.2.md"),  # a dotted name is a note's name when one has it
        ("cd", "CI/CD.md"),
        ("nobody", None),
    ],
)
def test_a_wikilink_resolves_by_file_name_path_title_then_alias(target, expected):
    assert resolved(target) == expected


def test_a_file_name_wins_over_a_title_and_a_title_over_an_alias():
    notes = {"Ana Lima.md": ("Someone else", ["Phoenix rollout plan"]), **NOTES}

    def both(name: str) -> list[str]:
        return [p for p, (t, a) in notes.items() if name in links.names_of(p, t, a)]

    assert links.resolve(Link("x", "ana lima"), "a.md", both) == "Ana Lima.md"
    assert links.resolve(Link("x", "phoenix rollout plan"), "a.md", both) == ("projects/Phoenix.md")


def test_ties_go_to_the_linking_notes_folder_then_fewest_folders_then_alphabetical():
    assert links.nearest(["x.md", "deep/er/x.md"], "deep/er/n.md") == "deep/er/x.md"
    assert links.nearest(["b/x.md", "x/y/x.md", "a/x.md"], "q/n.md") == "a/x.md"
    assert links.nearest(["zz/x.md", "people/x.md"], "n.md") == "people/x.md"
    assert resolved("Ana", "people/other.md") == "people/Ana.md"  # its own folder's Ana
    assert resolved("Ana", "zz/other.md") == "zz/Ana.md"


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        ("../people/Ana", "daily/today.md", "people/Ana.md"),  # from the linking note
        ("team/Ana", "people/x.md", "people/team/Ana.md"),
        ("/people/Ana", "daily/today.md", "people/Ana.md"),  # from the vault's root
        ("Ana", "people/x.md", "people/Ana.md"),  # the same folder first
        ("Ana", "daily/today.md", "Ana.md"),  # then by name, as a wikilink
        ("../../../people/team/Ana", "a/b.md", "people/team/Ana.md"),  # (out of the vault)
    ],
)
def test_a_markdown_link_resolves_from_its_folder_then_as_a_name(target, source, expected):
    assert resolved(target, source, markdown=True) == expected


def test_a_wikilink_written_with_dot_segments_is_a_path_from_its_folder():
    assert resolved("./team/Ana", "people/x.md") == "people/team/Ana.md"
    assert resolved("../Ana", "people/team/x.md") == "people/Ana.md"
    assert links.link_keys(Link("x", "../Ana"), "people/team/x.md") == ["m:people/ana", "f:ana"]


def test_the_names_of_a_note_and_the_keys_of_a_link_meet():
    names = links.names_of("projects/Sub/Phoenix.md", "Phoenix rollout plan", ["Fire bird"])
    assert names == [
        "file:phoenix",
        "path:projects/sub/phoenix",
        "path:sub/phoenix",
        "path:phoenix",
        "title:phoenix rollout plan",
        "alias:fire bird",
    ]
    values = {n.split(":", 1)[1] for n in names}
    assert links.link_keys(Link("x", "Sub/Phoenix"), "a.md") == ["w:sub/phoenix"]
    assert links.link_keys(Link("x", "Fire  Bird"), "a.md") == ["w:fire bird"]
    assert links.link_keys(Link("x", "../projects/Sub/Phoenix", True), "daily/x.md") == [
        "m:projects/sub/phoenix",
        "f:projects/sub/phoenix",
    ]
    assert links.link_keys(Link("x", "../../out", True), "daily/x.md") == ["f:out"]
    assert {"sub/phoenix", "fire bird", "projects/sub/phoenix"} <= values


def test_aliases_may_be_a_list_or_one_string():
    assert links.alias_list(["A", 2, None, True, " "]) == ["A", "2"]
    assert links.alias_list("Only one") == ["Only one"]
    assert links.alias_list("One, two") == ["One", "two"]
    assert links.alias_list(None) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("` unmatched [[a]]", ["[[a]]"]),  # a run nothing closes is text
        ("``a ` [[b]] ``", []),  # closed by a run of its own length only
        ("`x` [[c]] `y`", ["[[c]]"]),
        ("`one\nline [[d]]`", []),  # a span may break a line...
        ("`one\n\n[[e]]`", ["[[e]]"]),  # ...but not a paragraph
    ],
)
def test_code_spans_follow_commonmark(body, expected):
    assert [link.text for link in links.extract(body)] == expected


def test_runs_of_ever_longer_backticks_are_read_in_one_pass():
    # Each run looks up the next of its length: a regex scanning ahead from every run
    # took seconds over a file like this one (1 MB, the largest a memory may be).
    body = "[[before]] " + " ".join("`" * k + "a" for k in range(1, 1400)) + " [[after]]"
    assert [link.text for link in links.extract(body)] == ["[[before]]", "[[after]]"]
