"""A chat history as a person exports it to notes: a long conversation between a user and an
assistant, one note per turn, with the sentence questions a person asks of it later.

    python -m bench.chat PATH --turns 600 [--seed 7] [--git]

The conversation runs over sessions of a few dozen turns, each on one topic (a trip, a bug,
a move, a recipe...). In it the user states facts (the sister's name, the flight's time);
the assistant answers in the loose, repetitive prose assistants write, so most words recur
across hundreds of turns. `questions` asks about the stated facts in whole sentences, each
with the note that answers it. Notes are hand-made: no ids, a front matter title, date and
tags, as chat exporters write them.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from bench.notes import commit_folder

# topic -> (facts the user states: (statement, question, values)), the topic's words.
TOPICS: dict[str, tuple[list[tuple[str, str, list[str]]], list[str]]] = {
    "trip": (
        [
            (
                "my flight to {v} leaves at seven forty",
                "when does my flight to {v} leave",
                ["Lisbon", "Porto", "Seville", "Naples", "Krakow"],
            ),
            (
                "we booked the hotel {v} near the old town",
                "which hotel did we book",
                ["Casa Azul", "Hotel Miramar", "Pension Lumen", "Villa Serena"],
            ),
        ],
        ["trip", "flight", "hotel", "train", "luggage", "itinerary", "museum", "beach", "days"],
    ),
    "bug": (
        [
            (
                "the crash only happens when {v} is enabled",
                "what setting makes the app crash",
                ["dark mode", "offline sync", "batch upload", "verbose logging"],
            ),
            (
                "the failing test is called {v}",
                "what is the name of the failing test",
                ["test_refund_rounding", "test_cache_expiry", "test_login_retry"],
            ),
        ],
        ["error", "stack", "trace", "python", "function", "test", "crash", "logs", "fix"],
    ),
    "family": (
        [
            (
                "my sister {v} is visiting next month",
                "what is my sister's name",
                ["Mara", "Ilse", "Noor", "Tamsin", "Renata"],
            ),
            (
                "my dad turns {v} this spring",
                "how old is my dad turning",
                ["sixty", "sixty five", "seventy", "seventy two"],
            ),
        ],
        ["family", "birthday", "visit", "present", "dinner", "weekend", "call", "gift"],
    ),
    "cooking": (
        [
            (
                "I am allergic to {v}",
                "what am I allergic to",
                ["hazelnuts", "shellfish", "sesame", "kiwi"],
            ),
            (
                "the sourdough starter is named {v}",
                "what is the sourdough starter called",
                ["Bubbles", "Clint Yeastwood", "Dough Rey", "Gerald"],
            ),
        ],
        ["recipe", "oven", "bread", "flour", "dinner", "sauce", "minutes", "salt", "bake"],
    ),
    "moving": (
        [
            (
                "the new flat is on {v} street",
                "which street is the new flat on",
                ["Lindell", "Harbour", "Quarry", "Willow", "Bakery"],
            ),
            (
                "the movers come on {v}",
                "what day do the movers come",
                ["Tuesday", "Thursday", "Saturday"],
            ),
        ],
        ["move", "flat", "boxes", "lease", "rent", "furniture", "keys", "landlord", "van"],
    ),
    "work": (
        [
            (
                "my manager {v} wants the report by Friday",
                "who is my manager",
                ["Okafor", "Lindqvist", "Haddad", "Moreau"],
            ),
            (
                "the quarterly review is in room {v}",
                "which room is the quarterly review in",
                ["four twelve", "Atlas", "Birch", "the boardroom"],
            ),
        ],
        ["meeting", "report", "deadline", "team", "slides", "review", "project", "email"],
    ),
}
# What assistants say whatever the topic: the words that recur in every session.
FILLER = [
    "That sounds like a good plan, and I can help you think it through.",
    "Here are a few things you could try first, one step at a time.",
    "It depends on what matters most to you, but a simple option is usually best.",
    "Let me know if you want me to go into more detail on any of these points.",
    "Good question: the short answer is yes, with a couple of caveats.",
    "I would start by writing down what you already know and what is still open.",
    "You could also ask someone who has done this before for their experience.",
    "Make a short list, check it the day before, and keep a copy on your phone.",
]
USER_ASKS = [
    "Can you help me with the {w} and the {x}?",
    "What should I do about the {w} first?",
    "Any tips for the {w}? I keep forgetting the {x}.",
    "Thanks. And what about the {w}?",
    "I am worried about the {w}, is that normal?",
    "Could you remind me how to handle the {x}?",
]
TURNS_PER_SESSION = 24


@dataclass
class Question:
    """A sentence question about a fact the user stated, and the note that states it."""

    text: str
    answer: str
    relevant: str  # the path of the note, relative to the folder


@dataclass
class Chat:
    """The notes (relative path -> text) and the questions they answer."""

    notes: dict[str, str]
    questions: list[Question]


def build(turns: int, seed: int = 7) -> Chat:
    """A conversation of `turns` turns (user and assistant in turn), as notes."""
    rng = random.Random(seed)
    notes: dict[str, str] = {}
    asked: list[Question] = []
    day = date(2025, 1, 6)
    topics = list(TOPICS)
    for start in range(0, turns, TURNS_PER_SESSION):
        topic = topics[(start // TURNS_PER_SESSION) % len(topics)]
        facts, words = TOPICS[topic]
        # Each fact is stated once per session, by the user, early on.
        stating = {2 * (i + 1): fact for i, fact in enumerate(facts)}
        for turn in range(start, min(turns, start + TURNS_PER_SESSION)):
            at = turn - start
            speaker = "User" if at % 2 == 0 else "Assistant"
            w, x = rng.sample(words, 2)
            if speaker == "User" and at in stating:
                statement, question, values = stating[at]
                value = rng.choice(values)
                text = f"By the way, {statement.format(v=value)}. " + rng.choice(USER_ASKS).format(
                    w=w, x=x
                )
                path = _path(day, turn, speaker)
                asked.append(Question(f"{question.format(v=value)}?", value, path))
            elif speaker == "User":
                text = rng.choice(USER_ASKS).format(w=w, x=x)
            else:
                picked = rng.sample(FILLER, rng.randint(2, 4))
                about = " ".join(rng.choices(words, k=rng.randint(4, 10)))
                text = f"{' '.join(picked)} For the {w}, think about {about}."
            notes[_path(day, turn, speaker)] = _note(day, turn, speaker, topic, text)
        day += timedelta(days=rng.randint(1, 4))
    return Chat(notes, asked)


def _path(day: date, turn: int, speaker: str) -> str:
    return f"Chats/{day.isoformat()}/{turn + 1:04d} {speaker.lower()}.md"


def _note(day: date, turn: int, speaker: str, topic: str, text: str) -> str:
    title = f"{day.isoformat()} turn {turn + 1} ({speaker.lower()})"
    front = f"---\ntitle: {title}\ncreated: {day.isoformat()}\ntags: [chat, {topic}]\n---\n"
    return f"{front}**{speaker}:** {text}\n"


def write_chat(path: Path, turns: int, seed: int = 7, git: bool = False) -> Chat:
    """Write the conversation's notes under path (with git, as a repository)."""
    chat = build(turns, seed)
    for relative, text in chat.notes.items():
        file = path / relative
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    if git:
        commit_folder(path, "Chat export")
    return chat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--git", action="store_true", help="make it a repository with one commit")
    args = parser.parse_args()
    chat = write_chat(args.path, args.turns, args.seed, args.git)
    print(f"wrote {len(chat.notes)} turns and {len(chat.questions)} questions to {args.path}")


if __name__ == "__main__":
    main()
