"""A person's notes folder, as people have them: no ids, a third without front matter,
titles from file names or an opening heading, `tags` as lists or one string, inline #tags,
aliases, [[wikilinks]], nested folders, attachments and an `.obsidian/` folder, over a
Zipfian vocabulary (a few words everywhere, most words rare).

    python -m bench.notes PATH --count N [--seed 7] [--git]

Writes the folder (with --git, as a repository with one commit of the notes, as a person
who versions their notes has it). bench.adopt measures `vault-tool init` and `reindex` on it.
"""

from __future__ import annotations

import argparse
import random
import subprocess
from pathlib import Path

FOLDERS = [
    "",
    "Daily",
    "Projects/Alpha",
    "Projects/Beta",
    "People",
    "Reading",
    "Inbox",
    "Archive/2024",
]
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "dra", "on", "el", "ix", "um"]


# Words of 2-4 syllables number 41,356: a vocabulary stays well below that, or drawing
# distinct words at random would take ever longer (and, past it, never end).
MOST_WORDS = 20_000


def vocabulary_size(count: int) -> int:
    """How many distinct words the notes of a folder of count notes are drawn from."""
    return min(max(2000, count // 2), MOST_WORDS)


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """`size` distinct made-up words (no dictionary needed on a fresh machine)."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_text(words: list[str], weights: list[float], count: int, rng: random.Random) -> str:
    chosen = rng.choices(words, weights=weights, k=count)
    sentences, start = [], 0
    while start < len(chosen):
        end = start + rng.randint(6, 16)
        sentence = " ".join(chosen[start:end])
        sentences.append(sentence[:1].upper() + sentence[1:] + ".")
        start = end
    return " ".join(sentences)


def note_text(
    n: int, names: list[str], words: list[str], weights: list[float], rng: random.Random
) -> str:
    """One note: one of five shapes people's notes take."""
    body = zipf_text(words, weights, rng.randint(40, 400), rng)
    link = f"[[{rng.choice(names)}]]" if rng.random() < 0.6 else ""
    tag = f" #{rng.choice(words[:50])}" if rng.random() < 0.5 else ""
    shape = n % 5
    if shape == 0:  # no front matter, no heading: the file name is the title
        return f"{body}{tag}\n\nSee {link}\n"
    if shape == 1:  # an opening H1
        return f"# {names[n]}\n\n{body}\n{link}{tag}\n"
    if shape == 2:  # Obsidian properties: a list of tags, aliases, a date
        return (
            f"---\ntags: [{rng.choice(words[:30])}, {rng.choice(words[:30])}]\n"
            f"aliases: [{names[n].split()[0]}]\ncreated: 2025-0{1 + n % 9}-1{n % 10}\n---\n"
            f"{body}\n\n## Links\n\n- {link}\n"
        )
    if shape == 3:  # tags as one string, a status the tool does not know, a lower heading
        front = f"---\ntags: {rng.choice(words[:30])}, misc\nstatus: draft\n---\n"
        return f"{front}## {names[n]}\n\n{body}{tag}\n"
    return f"---\ntitle: {names[n]}\ntype: note\n---\n{body}\n"  # a front matter title


def write_notes(path: Path, count: int, seed: int = 7, git: bool = False) -> int:
    rng = random.Random(seed)
    words = vocabulary(vocabulary_size(count), rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    names = [f"{rng.choice(words).title()} {rng.choice(words)} {n}" for n in range(count)]
    for n in range(count):
        folder = path / rng.choice(FOLDERS)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{names[n]}.md").write_text(note_text(n, names, words, weights, rng))
    (path / ".obsidian").mkdir(exist_ok=True)
    (path / ".obsidian" / "app.json").write_text('{"alwaysUpdateLinks": true}\n')
    (path / "attachments").mkdir(exist_ok=True)
    for n in range(max(1, count // 100)):
        (path / "attachments" / f"diagram-{n}.png").write_bytes(
            bytes(rng.randrange(256) for _ in range(512))
        )
    if git:
        commit_folder(path)
    return count


def commit_folder(path: Path, message: str = "My notes") -> None:
    """Make path a repository with one commit of everything in it, as a person has it: its
    history packed. `git add` streams the files into one pack (core.bigFileThreshold), as
    they would be long since; thousands of loose objects would start git's automatic gc
    at the commit, in the background, packing and deleting them while the benchmark
    measures init, reindex and the first writes."""
    for args in (
        ("init", "-q", "-b", "main"),
        ("-c", "core.bigFileThreshold=1", "add", "-A"),
        ("-c", "user.name=Person", "-c", "user.email=person@example.com", "commit", "-qm", message),
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--git", action="store_true", help="make it a repository with one commit")
    args = parser.parse_args()
    write_notes(args.path, args.count, args.seed, args.git)
    print(f"wrote {args.count} notes to {args.path}")


if __name__ == "__main__":
    main()
