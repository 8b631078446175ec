"""The query syntax of search, read into what ranks and what narrows. Pure: no index, no disk.

    billing owner          words: ranked, best first (a memory needs only some of them)
    "billing service"      a phrase: only memories with these words adjacent, in this order
    -draft  -"old plan"    leave out memories holding this word, or this phrase
    type:decision          only memories of this type (several: any of them)
    tag:billing            only memories with this tag (several: all of them)
    *                      every memory: with nothing else to rank by, newest first

A query of filters alone (`type:decision`, `* tag:billing`, `-draft`) lists the memories they
leave, newest first. Words are compared as search compares them: case, accents and word
endings aside, small words (the, of, who) skipped, so a phrase's "adjacent" skips them too.
Anything else (`--force`, `follow-up`, `note:`) is a plain word. A malformed query is
refused with InvalidInput naming what was wrong and the accepted forms.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from vault_tool.core import schema
from vault_tool.core.text import query_words, shared_analyzer
from vault_tool.errors import InvalidInput

FORMS = (
    'words; "a phrase" (its words adjacent, the quotes closed); -word or -"a phrase" (leave '
    "out memories holding it); type:TYPE; tag:NAME; * (every memory)"
)


@dataclass(frozen=True)
class Query:
    """A search query read: words to rank by, phrases to require, exclusions and filters."""

    words: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    excluded_words: tuple[str, ...] = ()
    excluded_phrases: tuple[str, ...] = ()
    memory_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """What ranking scores: the words, then the phrases' words."""
        return " ".join(self.words + self.phrases)

    @property
    def lists(self) -> bool:
        """Whether there is nothing to rank by: the memories left are listed newest first."""
        return not (self.words or self.phrases)


@lru_cache(maxsize=1024)
def parse_query(text: str) -> Query:
    """A query in the syntax above, read; InvalidInput (field query) if it is malformed."""
    found: dict[str, list[str]] = {
        "words": [],
        "phrases": [],
        "excluded_words": [],
        "excluded_phrases": [],
        "memory_types": [],
        "tags": [],
    }
    for token, quoted, excluded in _tokens(text):
        if quoted:
            found["excluded_phrases" if excluded else "phrases"].append(_phrase(token, excluded))
        elif excluded:
            found["excluded_words"].append(_excluded_word(token))
        elif token.lower().startswith(("type:", "tag:")):
            name, _, value = token.partition(":")
            kind = name.lower()
            found["memory_types" if kind == "type" else "tags"].append(_filter(kind, value))
        elif token != "*":
            found["words"].append(token)
    return Query(**{name: tuple(dict.fromkeys(values)) for name, values in found.items()})


def word_sequence(text: str) -> tuple[str, ...]:
    """A text's analysed words in order, repeats kept: what a phrase is looked for in."""
    return tuple(token.text for token in shared_analyzer()(text))


def holds_phrase(words: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    """Whether the phrase's analysed words occur in words adjacent and in order."""
    if not phrase:
        return False
    width = len(phrase)
    first = phrase[0]
    return any(
        words[start : start + width] == phrase for start, word in enumerate(words) if word == first
    )


def _tokens(text: str) -> list[tuple[str, bool, bool]]:
    """(token, quoted, excluded) in order; a quote opens a phrase wherever it appears."""
    tokens: list[tuple[str, bool, bool]] = []
    at, end = 0, len(text)
    while at < end:
        if text[at].isspace():
            at += 1
            continue
        excluded = text[at] == "-" and text.startswith('-"', at)
        start = at + 1 if excluded else at
        if text[start] == '"':
            close = text.find('"', start + 1)
            if close < 0:
                _refuse(f"the quote before {text[start + 1 :].strip()[:40]!r} is never closed")
            tokens.append((text[start + 1 : close], True, excluded))
            at = close + 1
            continue
        stop = start
        while stop < end and not text[stop].isspace() and text[stop] != '"':
            stop += 1
        token = text[start:stop]
        # --force is a word (an option someone searches for), not an exclusion of -force.
        minus = token.startswith("-") and not token.startswith("--")
        tokens.append((token[1:] if minus else token, False, minus))
        at = stop
    return tokens


def _phrase(phrase: str, excluded: bool) -> str:
    written = f'{"-" if excluded else ""}"{phrase}"'
    if not phrase.strip():
        _refuse(f"{written} is an empty phrase")
    if not query_words(phrase):
        _refuse(f"{written} has no word search can match (small words like the, of are skipped)")
    return " ".join(phrase.split())


def _excluded_word(word: str) -> str:
    if not word:
        _refuse("a lone - leaves nothing out: write -word, with no space, or drop the -")
    if word.lower().startswith(("type:", "tag:")):
        name = word.partition(":")[0].lower()
        _refuse(f"-{name}: is not a filter: name the {name}s you want with {name}:")
    if not query_words(word):
        _refuse(f"-{word} has no word search can match (small words like the, of are skipped)")
    return word


def _filter(kind: str, value: str) -> str:
    if not value:
        what = "a memory type" if kind == "type" else "a tag"
        _refuse(f"{kind}: needs {what} right after the colon, as in {kind}:{_example(kind)}")
    value = value.lower()
    if kind == "type" and value not in schema.memory_types():
        types = ", ".join(schema.memory_types())
        raise InvalidInput(
            f"query: unknown memory type {value!r} in type:{value}",
            hint=f"use one of: {types}. A query may hold {FORMS}",
            field="query",
        )
    if kind == "tag" and "," in value:
        _refuse(f"tag:{value} names more than one tag: write one tag each, as in tag:a tag:b")
    return value


def _example(kind: str) -> str:
    return "decision" if kind == "type" else "billing"


def _refuse(problem: str) -> Any:
    raise InvalidInput(f"query: {problem}", hint=f"a query may hold {FORMS}", field="query")
