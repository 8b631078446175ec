"""The text analyser in one pass (text.text_analyzer): the tokens Whoosh's chain
`RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map) | StopFilter(stoplist,
minsize=1) | StemFilter(lang="en")` yields, token for token, positions, offsets and stopped
words included, from one generator instead of five; an irregular form (taught, children)
is given to the stemmer as its base (core/word_forms.IRREGULAR).

Analysis was a quarter of a reindex, most of it the chain's calls per word: five
generators deep, a cache wrapper per stem. Imported only when text is first analysed
(it loads Whoosh).

What the index stores of a text is only each term's count (search/documents.py's
format): `counts` gives those in one loop over the words, with each word as written
mapped to its term once, no token made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import Token, Tokenizer
from whoosh.analysis.tokenizers import default_pattern
from whoosh.formats import Frequency
from whoosh.lang import stemmer_for_language
from whoosh.support.charset import accent_map
from whoosh.system import pack_uint

from vault_tool.core.word_forms import IRREGULAR

# Stems kept per analyser; past this the table starts again (a vault's vocabulary is far
# smaller; a file of random strings must not grow a server without bound).
STEMS_KEPT = 100_000
# default_pattern's words (test_words_analyzer.py pins the two), its group not captured,
# so findall gives whole words.
WORD = re.compile(r"[\w\*]+(?:\.?[\w\*]+)*")
# Chinese, Japanese and Korean write words without spaces between them: a run of their
# characters is one "word" to the pattern above, and "東京" inside a sentence would never
# match. Such a run is indexed and asked as its overlapping pairs of characters (one
# character alone as itself), the usual way to search these scripts without a dictionary.
_CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]+"
)


def pieces(term: str) -> list[str]:
    """A term as searched: itself, or, holding CJK characters, the pairs of each run of
    them (a single one alone) and the other parts between: "東京タワー" -> 東京, 京タ,
    タワ, ワー; "v2東京" -> v2, 東京."""
    if term.isascii() or not _CJK.search(term):
        return [term]
    found: list[str] = []
    at = 0
    for run in _CJK.finditer(term):
        if run.start() > at:
            found.append(term[at : run.start()])
        text = run.group(0)
        found += [text] if len(text) == 1 else [text[i : i + 2] for i in range(len(text) - 1)]
        at = run.end()
    if at < len(term):
        found.append(term[at:])
    return found


class Words(Tokenizer):
    """Words, lowercased, accents folded, stop words dropped (or marked), stemmed."""

    is_morph = True  # (as the chain's stemmer makes it: Whoosh asks has_morph())

    def __init__(self, stoplist: frozenset[str]) -> None:
        self.stoplist = frozenset(stoplist)
        self._ready()

    def _ready(self) -> None:
        self._stem = stemmer_for_language("en")
        self._stems: dict[str, str] = {}
        # a word as written -> its terms (none: a stop word; a CJK run: its pairs)
        self._terms: dict[str, tuple[str, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:  # (the index's schema is pickled)
        return {"stoplist": self.stoplist}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.stoplist = state["stoplist"]
        self._ready()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Words) and other.stoplist == self.stoplist

    __hash__ = Tokenizer.__hash__

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Any]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        stoplist, stems = self.stoplist, self._stems
        kept_pos = None  # (StopFilter's renumbering: kept words count on from the first)
        matches = default_pattern.finditer(value) if tokenize else (_Whole(value),)
        for n, match in enumerate(matches):
            word = match.group(0)
            text = word.lower().translate(accent_map)
            token.boost = 1.0
            if keeporiginal or not tokenize:  # (RegexTokenizer keeps a whole value's)
                token.original = word
            if positions:
                token.pos = start_pos + n
            if chars:
                token.startchar = start_char + match.start()
                token.endchar = start_char + match.end()
            if text and text not in stoplist:
                token.stopped = False
                found = stems.get(text)
                term = found if found is not None else self._stemmed(text)
                for piece in (term,) if term.isascii() else pieces(term):
                    if positions:
                        kept_pos = token.pos if kept_pos is None else kept_pos + 1
                        token.pos = kept_pos
                    token.text = piece
                    yield token
            elif not removestops:
                token.stopped = True
                token.text = text
                yield token

    def counts(self, value: str) -> dict[str, int]:
        """term -> how many of value's words are that term (stop words dropped), in the
        order first found: what Whoosh's Frequency format counts of this analyser's
        tokens."""
        terms, found = self._terms, {}
        for word in WORD.findall(value):
            held = terms.get(word)
            if held is None:
                held = self._term(word)
            for term in held:
                found[term] = found.get(term, 0) + 1
        return found

    def _term(self, word: str) -> tuple[str, ...]:
        if len(self._terms) >= STEMS_KEPT:
            self._terms.clear()
        text = word.lower().translate(accent_map)
        if not text or text in self.stoplist:
            held: tuple[str, ...] = ()
        else:
            held = tuple(pieces(self._stems.get(text) or self._stemmed(text)))
        self._terms[word] = held
        return held

    def _stemmed(self, text: str) -> str:
        if len(self._stems) >= STEMS_KEPT:
            self._stems.clear()
        found = self._stems[text] = self._stem(IRREGULAR.get(text, text))
        return found


class _Whole:
    """The whole value as one match (tokenize=False)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def group(self, _: int) -> str:
        return self.value

    def start(self) -> int:
        return 0

    def end(self) -> int:
        return len(self.value)


class Counted(Frequency):
    """Whoosh's Frequency format (what a TEXT field without phrases stores: each term's
    count) with a text's counts taken from Words.counts, not token by token: the same
    terms, counts and weights, in the same order."""

    def word_values(self, value: Any, analyzer: Any, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(value, str) or not isinstance(analyzer, Words) or kwargs != INDEXING:
            return super().word_values(value, analyzer, **kwargs)
        boost = self.field_boost
        return (
            (term, count, float(count) * boost, pack_uint(count))
            for term, count in analyzer.counts(value).items()
        )


# What a field passes when it indexes a value (whoosh.fields.FieldType.index).
INDEXING = {"mode": "index"}
