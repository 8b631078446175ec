"""The text analyser in one pass (text.text_analyzer): the tokens Whoosh's chain
`RegexTokenizer() | LowercaseFilter() | CharsetFilter(accent_map) | StopFilter(stoplist,
minsize=1) | StemFilter(lang="en")` yields, token for token, positions, offsets and stopped
words included, from one generator instead of five.

Analysis was a quarter of a reindex, most of it the chain's calls per word: five
generators deep, a cache wrapper per stem. Imported only when text is first analysed
(it loads Whoosh).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from whoosh.analysis import Token, Tokenizer
from whoosh.analysis.tokenizers import default_pattern
from whoosh.lang import stemmer_for_language
from whoosh.support.charset import accent_map

# Stems kept per analyser; past this the table starts again (a vault's vocabulary is far
# smaller; a file of random strings must not grow a server without bound).
STEMS_KEPT = 100_000


class Words(Tokenizer):
    """Words, lowercased, accents folded, stop words dropped (or marked), stemmed."""

    is_morph = True  # (as the chain's stemmer makes it: Whoosh asks has_morph())

    def __init__(self, stoplist: frozenset[str]) -> None:
        self.stoplist = frozenset(stoplist)
        self._ready()

    def _ready(self) -> None:
        self._stem = stemmer_for_language("en")
        self._stems: dict[str, str] = {}

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
        stoplist, stems, stem = self.stoplist, self._stems, self._stem
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
                if positions:
                    kept_pos = token.pos if kept_pos is None else kept_pos + 1
                    token.pos = kept_pos
                token.stopped = False
                found = stems.get(text)
                if found is None:
                    if len(stems) >= STEMS_KEPT:
                        stems.clear()
                    found = stems[text] = stem(text)
                token.text = found
                yield token
            elif not removestops:
                token.stopped = True
                token.text = text
                yield token


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
