"""Text analysis shared by indexing, ranking and entity resolution: words, names, glosses.

One analyser for the index and for queries, so a query word and an indexed word are
compared after the same lowercasing, accent folding, stop words and stemming. Whoosh's
analysis module is pure text processing; it is imported only when text is first analysed.
"""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache
from typing import Any

# Whoosh's English stop words, plus the words questions are made of: agents ask "who
# owns ...", "how do we ...", and those words say nothing about which memory is meant.
QUESTION_WORDS = frozenset(
    [
        "who",
        "whom",
        "whose",
        "what",
        "which",
        "where",
        "when",
        "why",
        "how",
        "do",
        "does",
        "did",
        "done",
        "is",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "me",
        "my",
        "our",
        "ours",
        "there",
        "their",
        "they",
        "them",
        "about",
        "into",
        "than",
        "then",
        "these",
        "those",
        "has",
        "had",
        "its",
        "should",
        "would",
        "could",
    ]
)


def text_analyzer() -> Any:
    """Words, lowercased, accents folded, stop words dropped, stemmed (Snowball's English
    stemmer, Porter's second: running, deploys and deployment -> run and deploy). One pass
    (core/words.py) doing what Whoosh's chain of five does (test_words_analyzer.py)."""
    from whoosh.analysis import STOP_WORDS

    from vault_tool.core.words import Words

    return Words(STOP_WORDS | QUESTION_WORDS)


def normalize_name(name: str) -> str:
    """Case- and accent-insensitive name with single spaces: 'José  Díaz' -> 'jose diaz'."""
    folded = unicodedata.normalize("NFKD", name.casefold())
    return " ".join("".join(c for c in folded if not unicodedata.combining(c)).split())


# normalize_name, cached: ranking compares every mention of every candidate, query after
# query.
name_key = lru_cache(maxsize=16384)(normalize_name)


def gloss_words(gloss: str) -> frozenset[str]:
    """The content words of a gloss, stemmed and accent-folded (stop words dropped)."""
    return _gloss_words(gloss)


# Bounded: a server asks for every title and gloss it ranks, for as long as it runs.
@lru_cache(maxsize=65536)
def _gloss_words(gloss: str) -> frozenset[str]:
    return frozenset(shared_analyzer().counts(gloss))  # (its tokens' terms, in one pass)


def query_words(text: str) -> list[str]:
    """The analysed words of a query (stemmed, accent-folded, stop words dropped)."""
    return list(analysed_words(text))


@lru_cache(maxsize=4096)
def analysed_words(text: str) -> tuple[str, ...]:
    """The distinct analysed words of a text, in order of first use (cached)."""
    # Cached: feedback compares every search with the queries operators judged, and the
    # facts of every candidate are analysed again query after query.
    return tuple(shared_analyzer().counts(text))  # (its tokens' terms, first use first)


@cache
def shared_analyzer() -> Any:
    """The text analyzer, made once (building one costs more than analysing a query)."""
    return text_analyzer()
