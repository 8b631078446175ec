"""The hardened front matter loader holds the same rules on libyaml's C parser and on
PyYAML's own: the inputs of test_memory.py's YAML tests (and a few more), on each.

Only a syntax error's wording is the parser's own; its line, and every refusal the loader
itself makes (aliases, nesting, size, tags, non-mappings), are the same on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vault_tool.core import yaml_safe
from vault_tool.core.yaml_safe import PARSERS, load_yaml
from vault_tool.errors import UnparseableFile

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample-vault"
BILLION_LAUGHS = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
)


def front(text: str, parser: str):
    # As memory.parse hands it over: the newline after the opening --- comes first.
    return load_yaml("\n" + text, "notes/x.md", parser=parser)


def test_libyaml_is_used_where_pyyaml_has_it():
    assert PARSERS[0] == ("libyaml" if yaml.__with_libyaml__ else "python")


@pytest.fixture(params=PARSERS)
def parser(request) -> str:
    return request.param


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("memory_type: note\ntitle: T: x\ntags: [a]\n", 3),
        ("memory_type: note\ntitle: T\n\tpinned: true\n", 4),
        ("memory_type: note\ntitle: T\nentities:\n  - n: Ana\n   kind: x\n", 6),
        ("a: 'unclosed\n", 3),
        ("a: [1, 2\n", 3),
    ],
    ids=["colon-in-value", "tab", "bad-indent", "unclosed-quote", "unclosed-bracket"],
)
def test_a_syntax_error_is_at_the_same_line_on_either_parser(parser: str, text: str, line: int):
    with pytest.raises(UnparseableFile) as caught:
        front(text, parser)
    assert caught.value.line == line
    assert caught.value.reason.startswith("front matter is not valid YAML: ")
    assert caught.value.hint == yaml_safe._YAML_HINT


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("memory_type: note\ntitle: &t Wombats\naliases:\n  - *t\n", "anchors and aliases"),
        (BILLION_LAUGHS + "\n", "anchors and aliases"),
        ("x: " + "[" * 40 + "]" * 40 + "\n", "nested too deeply or is too large"),
        ("x: [" + ", ".join(["a"] * 6000) + "]\n", "nested too deeply or is too large"),
        ("a: !!python/object/apply:os.system [ls]\n", "could not determine a constructor"),
        ("a: !custom x\n", "could not determine a constructor for the tag '!custom'"),
        ("? [a, b]\n: 1\n", "found unhashable key"),
        ("- a\n- b\n", "front matter is not a mapping of keys to values"),
        ("just words\n", "front matter is not a mapping of keys to values"),
    ],
    ids=[
        "alias",
        "billion-laughs",
        "deep",
        "large",
        "python-tag",
        "local-tag",
        "key",
        "list",
        "text",
    ],
)
def test_every_refusal_is_word_for_word_the_same(text: str, reason: str):
    refusals = []
    for each in PARSERS:
        with pytest.raises(UnparseableFile) as caught:
            front(text, each)
        assert reason in caught.value.reason
        refusals.append((caught.value.line, caught.value.reason, caught.value.hint))
    assert len(set(refusals)) == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", {}),
        ("created: 2026-11-29T19:46:45Z\nupdated: 2026-11-30\n", None),
        ("a: 1\na: 2\n", {"a": 2}),  # a repeated key: the last one, as PyYAML reads it
        ("<<: {a: 1}\nb: 2\n", {"a": 1, "b": 2}),
        ("a: 0x1F\nb: 1_000\nc: 1:20\nd: .inf\ne: yes\nf: ~\ng: '007'\n", None),
        ("tags: [a, b]\naliases:\n  - Wombat\nzz: {a: [1, 2.5, null, true]}\n", None),
    ],
    ids=["empty", "dates", "repeated-key", "merge", "scalars", "nested"],
)
def test_values_are_the_same_on_either_parser(text: str, value):
    read = [front(text, each) for each in PARSERS]
    assert all(r == read[0] and list(r) == list(read[0]) for r in read)
    if value is not None:
        assert read[0] == value
    if "created" in text:
        assert read[0] == {"created": "2026-11-29T19:46:45Z", "updated": "2026-11-30"}


def test_every_sample_vault_front_matter_reads_the_same():
    for path in sorted(SAMPLE_VAULT.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            raw = "\n" + text[4:].split("\n---\n", 1)[0] + "\n"
            read = [load_yaml(raw, path.name, parser=each) for each in PARSERS]
            assert all(r == read[0] for r in read), path


def test_a_lone_surrogate_escape_never_reaches_a_value_as_valid_text(parser: str):
    # libyaml refuses the escape; PyYAML reads it, and the schema's text check refuses it.
    from vault_tool.core import schema

    text = 'title: "\\ud800"\n'
    try:
        value = front(text, parser)
    except UnparseableFile:
        return
    assert schema.problems(value, "memory.schema.json")[0].message.endswith(
        "is not valid Unicode text (a lone surrogate)"
    )
