"""A seeded multi-session team chat, stored one memory per turn, and what each topic holds
(the turns that state each thing, who led what when), for the questions about it.

Six people (two share a first name, two share a role), each with a gloss, talk over
`sessions` sessions spread across the DAYS days before `today` (the real date by default, so
"last week" in a question resolves against the clock the search runs under; everything else
depends on the seed alone). They state personal plans (a move, time off, a talk), preferences
(an editor, a standup time), team plans and decisions (an offsite, a launch, an event bus),
and who leads what; some plans and preferences change in a later session, and leads hand
over. Between those turns: greetings, acknowledgements and small talk that share the common
words. `requests` turns each turn into a `remember` item (speaker and topic as entities with
glosses, the session's date in the title and in a `said` fact's valid_from, lead facts with
valid_from / valid_until). bench/conv_questions.py draws the questions, over disjoint folds
of the topics, one fold per seed, so the held-out seed never shares a target with the tuning
seeds.

One memory per turn, not per exchange: a turn has one speaker and one day, so its `said`
fact is exact, and "what did Ana say" has an answer that is hers alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from bench import conv_world as world
from bench.conv_world import Plan

# Frozen before any tuning: ranking choices are made on TUNING_SEEDS only. HELD_OUT_SEED is
# reported and never tuned on.
TUNING_SEEDS = (1, 2)
HELD_OUT_SEED = 3
SEEDS = (*TUNING_SEEDS, HELD_OUT_SEED)
TYPES = ("single_fact", "multi_hop", "temporal", "changed_fact", "entity_centric")
TYPES += ("paraphrase", "adversarial")
CHAT = {"n": "team chat", "kind": "conversation", "is": "the team's running conversation"}


@dataclass
class Turn:
    """One line of the chat: who said what on which day, and the structure stored with it."""

    day: date
    speaker: str
    text: str
    gist: str
    memory_type: str = "note"
    thread: str | None = None
    entities: list[dict[str, str]] = field(default_factory=list)
    facts: list[dict[str, str]] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.day.isoformat()} · {self.speaker}: {self.gist}"


@dataclass
class Thread:
    """A topic talked about across sessions: a person's plan, a team plan, or a lead."""

    key: str
    plan: Plan | None
    owner: str | None = None
    project: tuple[str, str] | None = None
    turns: list[int] = field(default_factory=list)
    slots: dict[str, list[int]] = field(default_factory=dict)
    leads: list[tuple[int, str, date]] = field(default_factory=list)  # (turn, person, start)

    @property
    def topic(self) -> str:
        """The topic entity's name: Ana's move, team offsite, on-call rota."""
        if self.project:
            return self.project[0]
        assert self.plan is not None
        return f"{self.owner.split()[0]}'s {self.plan.noun}" if self.owner else self.plan.noun

    def slot(self, name: str) -> world.Slot:
        assert self.plan is not None
        return next(s for s in self.plan.slots if s.name == name)


@dataclass
class Conversation:
    """The turns in order, the people, the session days and what each topic holds."""

    seed: int
    today: date
    people: dict[str, str]
    days: list[date]
    turns: list[Turn]
    threads: dict[str, Thread]


# --- the chat ------------------------------------------------------------------------------


def build(sessions: int, seed: int = 7, today: date | None = None) -> Conversation:
    """The chat of `sessions` sessions (at most world.DAYS), drawn from seed. Each person has
    five plans of their own from 32 sessions on, fewer below (a smoke size stays small)."""
    rng = random.Random(seed)
    today = today or datetime.now(UTC).date()  # the day the vault's clock says it is
    days = sorted(today - timedelta(days=d) for d in rng.sample(range(1, world.DAYS + 1), sessions))
    threads: dict[str, Thread] = {}
    events: dict[int, list[tuple]] = {i: [] for i in range(sessions)}
    for name, _ in world.PEOPLE:
        for plan in rng.sample(world.PERSONAL, min(5, 1 + sessions // 8)):
            threads[f"{name}/{plan.key}"] = Thread(f"{name}/{plan.key}", plan, owner=name)
    for plan in world.TEAM:
        threads[plan.key] = Thread(plan.key, plan)
    for project in world.LEADS:
        threads[project[0]] = Thread(project[0], None, project=project)
    for thread in threads.values():
        planned = _events(thread, rng)[:sessions]
        at = sorted(rng.sample(range(sessions), len(planned)))
        for i, event in zip(at, planned, strict=True):
            events[i].append((thread, *event))
    turns: list[Turn] = []
    for at, day in enumerate(days):
        rng.shuffle(events[at])
        _session(day, events[at], turns, rng)
    return Conversation(seed, today, dict(world.PEOPLE), days, turns, threads)


def _events(thread: Thread, rng: random.Random) -> list[tuple]:
    """What will be said on the topic, in order: (slot, value, step) or (None, aside, 0)."""
    if thread.project:
        names = [n for n, _ in world.PEOPLE]
        return [(None, who, step) for step, who in enumerate(rng.sample(names, rng.randint(2, 3)))]
    assert thread.plan is not None
    first, later = [], []
    for slot in thread.plan.slots:
        chain = rng.sample(slot.values, rng.choices((1, 2, 3), (0.55, 0.3, 0.15))[0])
        first.append((slot, chain[0], 0))
        later += [(slot, v, step) for step, v in enumerate(chain[1:], 1)]
    asides = thread.plan.asides
    first += [(None, aside, 0) for aside in rng.choices(asides, k=rng.randint(2, 4))]
    rng.shuffle(first)
    rng.shuffle(later)
    return first + later


def _session(day: date, said: list[tuple], turns: list[Turn], rng: random.Random) -> None:
    """One session: greetings, the session's statements with replies between, a goodbye."""
    names = [n for n, _ in world.PEOPLE]
    said = [(thread, _speaker(thread, event[1], rng), *event) for thread, *event in said]
    speakers = {who for _, who, *_ in said}
    present = sorted(speakers | set(rng.sample(names, rng.randint(1, 3))))
    for who in rng.sample(present, min(len(present), rng.randint(1, 2))):
        turns.append(_filler(day, who, rng.choice(world.GREETINGS), "hello"))
    turns += [_filler(day, rng.choice(present), *_chatter(rng)) for _ in range(rng.randint(2, 4))]
    for thread, who, slot, value, step in said:
        thread.turns.append(len(turns))
        if slot is not None:
            thread.slots.setdefault(slot.name, []).append(len(turns))
        turns.append(_content(day, thread, who, slot, value, step, rng))
        others = [p for p in present if p != who]
        if thread.plan and others and rng.random() < 0.45:
            turns.append(_reply(day, rng.choice(others), who, thread, slot and value, rng))
        elif rng.random() < 0.4:
            turns.append(_filler(day, rng.choice(present), rng.choice(world.ACKS), "agrees"))
        for _ in range(rng.randint(0, 3)):
            turns.append(_filler(day, rng.choice(present), *_chatter(rng)))
    turns.append(_filler(day, rng.choice(present), rng.choice(world.CLOSINGS), "signing off"))


def _reply(day: date, who: str, to: str, thread: Thread, value, rng: random.Random) -> Turn:
    """Another person answers a statement: names them, the topic or the value; states nothing."""
    assert thread.plan is not None
    lines = [r for r in world.REPLIES if value or "{v}" not in r]
    noun = thread.plan.noun if thread.owner else thread.topic
    text = rng.choice(lines).format(first=to.split()[0], noun=noun, v=value)
    turn = _filler(day, who, text, f"reply to {to.split()[0]}")
    turn.entities.insert(1, _person(to))
    return turn


def _speaker(thread: Thread, value: str, rng: random.Random) -> str:
    if thread.owner:
        return thread.owner
    if thread.project:  # the manager announces a new lead, or the new lead does
        return rng.choice(["Ben Okafor", value])
    return rng.choice([n for n, _ in world.PEOPLE])


def _chatter(rng: random.Random) -> tuple[str, str]:
    """A line of small talk or work talk, and its gist."""
    gist, line = rng.choice(rng.choice((world.SMALL_TALK, world.WORK_TALK)))
    return line.format(**{k: rng.choice(v) for k, v in world.FILLS.items()}), gist


def _filler(day: date, who: str, text: str, gist: str) -> Turn:
    return Turn(
        day,
        who,
        text,
        gist,
        entities=[_person(who), CHAT],
        facts=[_fact(who, "said", CHAT["n"], day)],
    )


def _content(day: date, thread: Thread, who: str, slot, value: str, step: int, rng) -> Turn:
    """A statement on a topic: its `said` fact, and a fact for the value where it is a thing."""
    if thread.project:
        return _lead_turn(day, thread, who, value, step, rng)
    plan = thread.plan
    assert plan is not None
    topic = {"n": thread.topic, "kind": plan.kind, "is": plan.gloss.format(name=thread.owner)}
    entities, facts = [_person(who), topic], [_fact(who, "said", topic["n"], day)]
    if slot is None:
        text, gist = value, thread.topic
    else:
        text = rng.choice(slot.says).format(v=value)
        if step:
            text = f"{rng.choice(world.CHANGES)} {text}"
        gist = slot.gist.format(v=value)
        if slot.predicate:
            entities.append({"n": value, "kind": slot.kind, "is": slot.value_gloss})
            facts.append(_fact(who if thread.owner else thread.topic, slot.predicate, value, day))
    if rng.random() < 0.3:
        text = f"{text} {_chatter(rng)[0]}"
    return Turn(day, who, text, gist, plan.memory_type, thread.key, entities, facts)


def _lead_turn(day: date, thread: Thread, who: str, new: str, step: int, rng) -> Turn:
    """A new lead: the fact of the new lead, and the ended lead's fact with its last day."""
    assert thread.project is not None
    project, gloss = thread.project
    topic = {"n": project, "kind": "project", "is": gloss}
    entities = [_person(who), topic] + ([_person(new)] if new != who else [])
    facts = [_fact(who, "said", topic["n"], day), _fact(new, "leads", project, day)]
    if step == 0:
        text = rng.choice(world.LEAD_FIRST).format(new=new, p=project)
    else:
        _, old, start = thread.leads[-1]
        text = rng.choice(world.LEAD_NEXT).format(new=new, old=old, p=project)
        if old not in (who, new):
            entities.append(_person(old))
        facts.append(_fact(old, "leads", project, start, day - timedelta(days=1)))
    thread.leads.append((thread.turns[-1], new, day))
    return Turn(day, who, text, f"{new} leads the {project}", "fact", thread.key, entities, facts)


def _person(name: str) -> dict[str, str]:
    return {"n": name, "kind": "person", "is": dict(world.PEOPLE)[name]}


def _fact(subject: str, predicate: str, obj: str, start: date, until: date | None = None):
    fact = {"subject": subject, "predicate": predicate, "object": obj, "valid_from": str(start)}
    return fact | ({"valid_until": str(until)} if until else {})


def requests(convo: Conversation) -> list[dict[str, Any]]:
    """One `remember` create item per turn, in the order they were said."""
    return [
        {
            "content_md": f"# {turn.title}\n\n**{turn.speaker}:** {turn.text}\n",
            "semantic_delta": {
                "memory_type": turn.memory_type,
                "title": turn.title,
                "entities": turn.entities,
                "facts": turn.facts,
                "tags": ["conversation"],
            },
        }
        for turn in convo.turns
    ]
