"""Notes found by a few of their own rarer words: the plainest lexical task, side by side.

    python -m bench.rare_words [--count 1000] [--queries 120] [--seed 11]

Writes `count` notes of prose (Zipfian vocabulary, as bench/notes.py draws it) through
`Vault.remember`, in two shapes an agent writes: `declared` (the note's title and its tags
declared as entities, a fact linking them) and `minimal` (two entities and one fact that
have nothing to do with the text). Each query is two or three of one note's rarer body
words (the middle third of its words by the number of notes they are in: its rarest find
it alone); a query is found when its note is in the top 10. The same texts go to bm25s
(Snowball stemmer) and to SQLite FTS5's BM25 (porter tokenizer, the words OR-ed), the
reference every simple memory server is built on. Prints found-in-top-10 and MRR@10 per
system and shape; writes bench/results/rare-words-N.json.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.measure import table, write_results
from bench.notes import vocabulary, vocabulary_size, zipf_text

K = 10
SHAPES = ("declared", "minimal")


def notes(count: int, seed: int) -> list[dict[str, Any]]:
    """count notes: title, tags and body, seeded."""
    rng = random.Random(seed)
    words = vocabulary(vocabulary_size(count), rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    made = []
    for n in range(count):
        title = " ".join(rng.choice(words[100:]) for _ in range(rng.randint(2, 4))).title()
        tags = sorted({rng.choice(words[:60]) for _ in range(rng.randint(1, 3))})
        body = zipf_text(words, weights, rng.randint(60, 300), rng)
        made.append({"title": f"{title} {n}", "tags": tags, "body": body})
    return made


def delta(note: dict[str, Any], shape: str) -> dict[str, Any]:
    """The semantic delta an agent would send with the note, in one of SHAPES."""
    if shape == "minimal":
        entities = [
            {"n": "Notebook", "kind": "project", "is": "where these notes are kept"},
            {"n": "Sam", "kind": "person", "is": "who writes the notes"},
        ]
        facts = [{"subject": "Sam", "predicate": "keeps", "object": "Notebook"}]
    else:
        entities = [{"n": note["title"], "kind": "topic", "is": note["title"].lower()}] + [
            {"n": tag, "kind": "tag", "is": f"notes tagged {tag}"} for tag in note["tags"]
        ]
        facts = [
            {"subject": note["title"], "predicate": "tagged", "object": tag} for tag in note["tags"]
        ]
    return {
        "memory_type": "note",
        "title": note["title"],
        "entities": entities,
        "facts": facts,
        "tags": note["tags"],
    }


def queries(made: list[dict[str, Any]], n: int, seed: int) -> list[tuple[int, str]]:
    """n (note index, query): two or three of the note's rarer body words."""
    from vault_tool.core.text import query_words

    rng = random.Random(seed + 1)
    df: Counter[str] = Counter()
    words_of = []
    for note in made:
        distinct = set(note["body"].lower().replace(".", "").split())
        words_of.append(sorted(distinct))
        df.update(distinct)
    asked = []
    for index in rng.sample(range(len(made)), n):
        by_rarity = sorted(words_of[index], key=lambda w: (df[w], w))
        # Not its rarest words (a word in one note finds it alone) but rarer than most.
        third = max(3, len(by_rarity) // 3)
        rare = [w for w in by_rarity[third : 2 * third] if query_words(w)]
        asked.append((index, " ".join(rng.sample(rare, rng.randint(2, 3)))))
    return asked


class Fts5:
    """SQLite FTS5, BM25 ranking, porter tokenizer; the query's words OR-ed."""

    name = "fts5"

    def __init__(self, texts: list[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("create virtual table notes using fts5(body, tokenize='porter unicode61')")
        self.db.executemany("insert into notes(rowid, body) values (?, ?)", enumerate(texts))

    def search(self, query: str) -> list[int]:
        match = " OR ".join(f'"{w}"' for w in query.split())
        rows = self.db.execute(
            "select rowid from notes where notes match ? order by rank limit ?", (match, K)
        )
        return [row[0] for row in rows]


class Bm25sOver:
    """bm25s with a Snowball stemmer over the same texts."""

    name = "bm25s"

    def __init__(self, texts: list[str]) -> None:
        import bm25s
        import Stemmer

        self.bm25s, self.stemmer = bm25s, Stemmer.Stemmer("english")
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.count = len(texts)

    def search(self, query: str) -> list[int]:
        tokens = self.bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )[0]
        docs, scores = self.retriever.retrieve(
            [tokens], k=min(K, self.count), show_progress=False, n_threads=1
        )
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if float(s) > 0]


def vault_ranks(
    made: list[dict[str, Any]], shape: str, asked: list[tuple[int, str]], workdir: Path
) -> list[int | None]:
    """The rank (1-based) of each query's note in vault_tool's top K, None when absent."""
    from vault_tool.engine.vault import Vault

    path = workdir / shape
    Vault.create(path)
    vault = Vault.open(path, client="bench", catch_up=False)
    try:
        ids = []
        for start in range(0, len(made), 20):
            items = [
                {
                    "content_md": f"# {note['title']}\n\n{note['body']}\n",
                    "semantic_delta": delta(note, shape),
                }
                for note in made[start : start + 20]
            ]
            result = vault.remember({"mode": "create", "items": items})
            ids += [item["memory_id"] for item in result["results"]]
        ranks = []
        for index, query in asked:
            hits = vault.search({"query": query, "top_k": K})["selected_hits"]
            found = [h["memory_id"] for h in hits]
            ranks.append(found.index(ids[index]) + 1 if ids[index] in found else None)
        return ranks
    finally:
        vault.close()


def summary(ranks: list[int | None]) -> dict[str, float]:
    return {
        "found_top10": sum(r is not None for r in ranks),
        "mrr10": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
    }


def bench(count: int, n_queries: int, seed: int, workdir: Path) -> dict[str, Any]:
    made = notes(count, seed)
    asked = queries(made, n_queries, seed)
    texts = [f"{note['title']}\n{' '.join(note['tags'])}\n{note['body']}" for note in made]
    results: dict[str, Any] = {"count": count, "queries": n_queries, "seed": seed}
    for system in (Fts5(texts), Bm25sOver(texts)):
        ranks = []
        for index, query in asked:
            found = system.search(query)
            ranks.append(found.index(index) + 1 if index in found else None)
        results[system.name] = summary(ranks)
    for shape in SHAPES:
        results[f"vault_tool {shape}"] = summary(vault_ranks(made, shape, asked, workdir))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-rare-"))
    try:
        results = bench(args.count, args.queries, args.seed, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = [
        [name, v["found_top10"], v["mrr10"]] for name, v in results.items() if isinstance(v, dict)
    ]
    print(table(rows, ["system", f"found in top {K} of {args.queries}", "MRR@10"]))
    print(write_results(f"rare-words-{args.count}", results))


if __name__ == "__main__":
    main()
