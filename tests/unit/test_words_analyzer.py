"""The one-pass analyser (core/words.py) yields what Whoosh's chain of five yields, then
each CJK run cut into its pairs of characters, token for token: text, positions, offsets,
originals, boosts and stopped words, in every mode the index and the queries use; and its
counts, through the index's format, are what Whoosh's Frequency format makes of the
chain's tokens."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from whoosh.analysis import (
    STOP_WORDS,
    CharsetFilter,
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.analysis.tokenizers import default_pattern
from whoosh.formats import Frequency
from whoosh.support.charset import accent_map

from vault_tool.core.text import QUESTION_WORDS, gloss_words, query_words, text_analyzer
from vault_tool.core.word_forms import IRREGULAR
from vault_tool.core.words import STEMS_KEPT, WORD, Counted, Words, pieces

SAMPLE = Path(__file__).resolve().parents[2] / "sample-vault"
TEXTS = [
    "",
    "   ",
    "Who owns the billing service? Ana owns it; she OWNED it in 2024.",
    "José Díaz moved to Zürich — naïve café façade, ŒUVRE, straße, Ǆ",
    "v1.2.3 deploys at 10.30 on api.example.com; e.g. U.S.A. and node.js",
    "running runner runs ran, deployments deployed deploying",
    "She taught the children, then went and bought drinks; the men ran. Found it, left.",
    "the a an of is was to be: only stop words here, and THE",
    "snake_case camelCase kebab-case *wild*card 日本語のテキスト ١٢٣ ⅷ",
    "a\u0301 combining, ﬁ ligature, ² superscript, \u200bzero\u200bwidth",
    "line one\nline two\r\n\ttabbed\u00a0nbsp",
    "私は東京に住んでいます。田中さんと会いました。東 京",
    "서울에서 만나요, the Seoul office; 東京tower v2東京 ｶﾀｶﾅ 𠮷野家",
]


class CjkPairs(Filter):
    """Each kept token holding CJK characters as its pieces (core/words.pieces), the later
    kept tokens' positions moved on by the pieces added (stopped ones keep theirs, as
    StopFilter leaves them)."""

    def __call__(self, tokens):
        added = 0
        for token in tokens:
            if token.stopped:
                yield token
                continue
            parts = pieces(token.text)
            pos = getattr(token, "pos", None)
            for n, piece in enumerate(parts):
                if pos is not None:
                    token.pos = pos + added + n
                token.text = piece
                yield token
            added += len(parts) - 1


class Irregular(Filter):
    """Each kept token's irregular form as its base (core/word_forms.IRREGULAR)."""

    def __call__(self, tokens):
        for token in tokens:
            if not token.stopped:
                token.text = IRREGULAR.get(token.text, token.text)
            yield token


def chain():
    return (
        RegexTokenizer()
        | LowercaseFilter()
        | CharsetFilter(accent_map)
        | StopFilter(stoplist=STOP_WORDS | QUESTION_WORDS, minsize=1)
        | Irregular()
        | StemFilter(lang="en", cachesize=50000)
        | CjkPairs()
    )


def tokens(analyzer, text: str, **options) -> list[tuple]:
    out = []
    for t in analyzer(text, **options):
        out.append(
            (
                t.text,
                t.stopped,
                t.boost,
                getattr(t, "pos", None),
                getattr(t, "startchar", None),
                getattr(t, "endchar", None),
                getattr(t, "original", None),
            )
        )
    return out


def every_text() -> list[str]:
    files = sorted(SAMPLE.rglob("*.md"))
    assert files, "the sample vault has notes"
    return TEXTS + [f.read_text(encoding="utf-8") for f in files]


OPTIONS = [
    {},
    {"positions": True},
    {"chars": True},
    {"positions": True, "chars": True, "keeporiginal": True},
    {"removestops": False, "positions": True},
    {"mode": "query", "removestops": False},
    {"positions": True, "start_pos": 7, "chars": True, "start_char": 100},
    {"tokenize": False},
    {"tokenize": False, "positions": True, "chars": True, "removestops": False},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_the_one_pass_analyser_yields_what_the_chain_yields(options: dict) -> None:
    ours, whoosh = text_analyzer(), chain()
    for text in every_text():
        assert tokens(ours, text, **options) == tokens(whoosh, text, **options), text[:60]


def test_it_survives_pickling_as_the_index_schema_is_and_compares_equal() -> None:
    analyzer = text_analyzer()
    copy = pickle.loads(pickle.dumps(analyzer))
    assert copy == analyzer and isinstance(copy, Words)
    assert [t.text for t in copy("Deployments ran")] == ["deploy", "run"]
    assert analyzer.has_morph()


def test_its_table_of_stems_stays_bounded() -> None:
    analyzer = text_analyzer()
    words = " ".join(f"w{n}x" for n in range(STEMS_KEPT + 10))
    assert sum(1 for _ in analyzer(words)) == STEMS_KEPT + 10
    assert len(analyzer._stems) <= STEMS_KEPT


def test_its_words_are_the_whoosh_tokenizers_words() -> None:
    assert default_pattern.pattern == r"[\w\*]+(\.?[\w\*]+)*"  # (WORD restates it)
    for text in every_text():
        assert WORD.findall(text) == [m.group(0) for m in default_pattern.finditer(text)]


def test_the_counted_format_gives_what_whoosh_frequency_gives_of_the_chain() -> None:
    ours, whoosh = Counted(field_boost=1.5), Frequency(field_boost=1.5)
    analyzer = text_analyzer()
    for text in every_text():
        expected = list(whoosh.word_values(text, chain(), mode="index"))
        assert list(ours.word_values(text, analyzer, mode="index")) == expected, text[:60]
        # Asked again (the words as written are known now), and by the chain's tokens.
        assert list(ours.word_values(text, analyzer, mode="index")) == expected
        assert list(ours.word_values(text, chain(), mode="index")) == expected
    assert list(ours.word_values(["a", "b", "a"], analyzer, mode="index")) == list(
        whoosh.word_values(["a", "b", "a"], chain(), mode="index")
    )


def test_its_counts_hold_the_terms_of_its_tokens_in_order_of_first_use() -> None:
    analyzer = text_analyzer()
    for text in every_text():
        terms = list(dict.fromkeys(token.text for token in analyzer(text)))
        assert list(analyzer.counts(text)) == terms, text[:60]
        assert query_words(text) == terms
        assert gloss_words(text) == frozenset(terms)


def test_its_table_of_words_as_written_stays_bounded() -> None:
    analyzer = text_analyzer()
    counts = analyzer.counts(" ".join(f"W{n}x" for n in range(STEMS_KEPT + 10)))
    assert len(counts) == STEMS_KEPT + 10
    assert len(analyzer._terms) <= STEMS_KEPT and len(analyzer._stems) <= STEMS_KEPT
