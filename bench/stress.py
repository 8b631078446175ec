"""A stress folder for ranking: hand-made notes over a vocabulary of about 70 words, so every
word of every query is in most notes and no word is rare enough to narrow the candidates.

    python -m bench.stress PATH --count N [--seed 7] [--git]

The notes take bench/notes.py's five hand-made shapes (no ids; some without front matter);
only the vocabulary differs: uniform over WORDS, where bench.notes draws a Zipfian one.
QUERIES are 1-4 of those words, the way bench.speed asks them.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from bench import notes

# Made-up words (no stemmer folds two into one) that every note draws from.
WORDS = notes.vocabulary(70, random.Random(70))


def queries(count: int, seed: int = 1) -> list[str]:
    """count queries of 1-4 words of WORDS: every word common, none rare."""
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(count)]


def write_stress(path: Path, count: int, seed: int = 7, git: bool = False) -> int:
    """Write count notes to path (with git, as a repository with one commit of them)."""
    rng = random.Random(seed)
    weights = [1.0] * len(WORDS)
    # Titles from the same words; the number keeps file names apart.
    names = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {n}" for n in range(count)]
    for n in range(count):
        folder = path / rng.choice(notes.FOLDERS)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{names[n]}.md").write_text(notes.note_text(n, names, WORDS, weights, rng))
    if git:
        notes.commit_folder(path)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--git", action="store_true", help="make it a repository with one commit")
    args = parser.parse_args()
    write_stress(args.path, args.count, args.seed, args.git)
    print(f"wrote {args.count} notes over {len(WORDS)} words to {args.path}")


if __name__ == "__main__":
    main()
