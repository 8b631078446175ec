"""The questions people ask of a team's chat (bench/conversations.py), with the turns that
answer them: drawn per seed from a disjoint fold of the chat's topics.

- single_fact: a statement asked in its own words ("where is Ana Ruiz moving to").
- multi_hop: two statements from different sessions (two things about one plan, or a thing
  about the person who leads a project now).
- temporal: when something was said ("when did Tom mention Kafka"), what a person said in a
  window relative to today ("what did Priya say last week about the move"; weeks run Monday
  to Sunday), and who led a project on a day.
- changed_fact: a plan, preference or lead that changed; the latest statement is relevant,
  the earlier ones are stale.
- entity_centric: everything said on one topic ("everything about Ana Costa's talk").
- paraphrase: a statement asked in other words, only names shared (the latest one where it
  changed, the older ones stale).
- adversarial: about things nobody mentioned; the right answer is none.

Questions name people by full name, by first name where it is unique, or by first name and
gloss. Relevant and stale turns are keys `t<index>` until `resolve` maps them to memory ids.
"""

from __future__ import annotations

import functools
import itertools
import random
from datetime import date, timedelta

from bench import conv_world as world
from bench.conversations import SEEDS, Conversation, Thread, Turn
from bench.questions import Question


def resolve(asked: list[Question], ids: list[str]) -> list[Question]:
    """The questions with turn keys (`t12`) replaced by the memory ids the turns were stored as."""

    def mapped(keys: list[str]) -> list[str]:
        return list(dict.fromkeys(ids[int(k[1:])] for k in keys))

    return [Question(q.qid, q.qtype, q.query, mapped(q.relevant), mapped(q.stale)) for q in asked]


def questions(convo: Conversation, seed: int, per_type: int) -> list[Question]:
    """per_type questions of each type (fewer where the chat has too few candidates), drawn
    from the seed's fold of topics; relevant and stale turns are keys `t<index>` (`resolve`)."""
    if seed not in SEEDS:
        raise ValueError(f"seed must be one of {SEEDS}: the folds are fixed")
    rng = random.Random(seed)
    keys = sorted(convo.threads)
    random.Random(f"folds-{convo.seed}").shuffle(keys)
    mine = [convo.threads[k] for k in keys[SEEDS.index(seed) :: len(SEEDS)]]
    out: list[Question] = []
    for qtype, pools in _candidates(convo, seed, mine, rng).items():
        for pool in pools:
            rng.shuffle(pool)
        mixed = [c for row in itertools.zip_longest(*pools) for c in row if c]
        for n, (query, relevant, stale) in enumerate(mixed[:per_type]):
            turn_keys = [f"t{i}" for i in relevant], [f"t{i}" for i in stale]
            out.append(Question(f"s{seed}-{qtype}-{n}", qtype, query, *turn_keys))
    return out


def _candidates(convo: Conversation, seed: int, mine: list[Thread], rng) -> dict[str, list]:
    """Each type's candidates (query, relevant turns, stale turns), as lists of kinds taken in
    turn, so that no kind crowds out another."""
    turns, today = convo.turns, convo.today
    ask = functools.partial(_ask, convo, rng=rng)

    def named(template: str, thread: Thread) -> str:
        return ask(template, thread.owner) if thread.owner else template

    unique, changed, reworded, when, window, spans, pairs, hops, topics = ([] for _ in range(9))
    for thread in mine:
        plan = thread.plan
        if 2 <= len(thread.turns) <= 10:
            topics.append((_everything(thread, rng), thread.turns, []))
        for i in thread.turns:
            speaker = turns[i].speaker
            phrase, lo, hi = _window(turns[i].day, today, rng)
            about = f"the {plan.noun}" if plan and thread.owner else f"the {thread.topic}"
            said = [
                j for j in thread.turns if turns[j].speaker == speaker and lo <= turns[j].day <= hi
            ]
            window.append((ask(f"what did {{who}} say {phrase} about {about}", speaker), said, []))
        if thread.project:
            project = thread.project[0]
            lead = [i for i, _, _ in thread.leads]
            changed.append((rng.choice(world.LEAD_ASK).format(p=project), lead[-1:], lead[:-1]))
            for (i, _, start), nxt in itertools.zip_longest(thread.leads, thread.leads[1:]):
                last = nxt[2] - timedelta(days=1) if nxt else today
                day = start + timedelta(days=rng.randint(0, (last - start).days))
                on = world.LEAD_WHEN.format(p=project, day=f"{day:%B} {day.day}")
                spans.append((on, [i], []))
            for other in mine:
                if other.owner == thread.leads[-1][1]:
                    for name, chain in other.slots.items():
                        slot = other.slot(name)
                        if "{who}'s" in slot.ask or turns[chain[-1]].day == thread.leads[-1][2]:
                            continue  # (no "the person who leads X now's talk"; two sessions)
                        hop = slot.ask.format(who=f"the person who leads the {project} now")
                        hops.append((hop, [lead[-1], chain[-1]], chain[:-1] + lead[:-1]))
            continue
        assert plan is not None
        for name, chain in thread.slots.items():
            slot = thread.slot(name)
            asked = named(slot.ask, thread)
            if len(chain) == 1:
                unique.append((asked, named(slot.other, thread), chain))
            else:  # the latest wins, asked in the statement's words or in others
                changed.append((asked, chain[-1:], chain[:-1]))
                reworded.append((named(slot.other, thread), chain[-1:], chain[:-1]))
            for i in chain:
                value = _value_of(turns[i], slot)
                when.append((ask(f"when did {{who}} mention {value}", turns[i].speaker), [i], []))
        chains = list(thread.slots.items())
        for (a, one), (b, two) in itertools.combinations(chains, 2):
            if turns[one[-1]].day != turns[two[-1]].day:
                asks = [named(thread.slot(n).ask, thread) for n in (a, b)]
                pairs.append((" and ".join(asks), [one[-1], two[-1]], one[:-1] + two[:-1]))
    absent = [t.format(who=n) for t in world.ABSENT_PERSONAL for n in convo.people]
    absent += world.ABSENT_TEAM
    random.Random(f"folds-{convo.seed}").shuffle(absent)
    return {
        "single_fact": [[(a, c, []) for a, _, c in unique[0::2]]],
        "multi_hop": [pairs, hops],
        "temporal": [when, window, spans],
        "changed_fact": [changed],
        "entity_centric": [topics],
        "paraphrase": [[(o, c, []) for _, o, c in unique[1::2]], reworded],
        "adversarial": [[(q, [], []) for q in absent[SEEDS.index(seed) :: len(SEEDS)]]],
    }


def _ask(convo: Conversation, template: str, name: str, rng: random.Random) -> str:
    """The question with the person named by full name, by first name where it is unique, or
    by first name and gloss (where no possessive or question end follows the name)."""
    first, r = name.split()[0], rng.random()
    if r < 0.2 and "{who}'s" not in template and not template.endswith("{who}"):
        return template.format(who=f"{first}, the {convo.people[name]},")
    alone = sum(n.split()[0] == first for n in convo.people) == 1
    return template.format(who=first if r < 0.4 and alone else name)


def _value_of(turn: Turn, slot: world.Slot) -> str:
    """The value a statement gave its slot (read back from its gist)."""
    head, _, tail = slot.gist.partition("{v}")
    return turn.gist[len(head) : len(turn.gist) - len(tail)]


def _everything(thread: Thread, rng: random.Random) -> str:
    form = rng.choice(("everything about {t}", "what do we know about {t}", "catch me up on {t}"))
    if thread.owner and thread.plan:
        return form.format(t=f"{thread.owner}'s {thread.plan.noun}")
    return form.format(t=f"the {thread.topic}")


def _window(day: date, today: date, rng: random.Random) -> tuple[str, date, date]:
    """A way to say when `day` was, relative to today, and the days it spans. Weeks run
    Monday to Sunday: "last week" is the whole calendar week before this one."""
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    options = [(f"on {day:%B} {day.day}", day, day)]
    if day == today - timedelta(days=1):
        options.append(("yesterday", day, day))
    if monday - timedelta(days=7) <= day < monday:
        options.append(("last week", monday - timedelta(days=7), monday - timedelta(days=1)))
    if previous <= day < first:
        options.append(("last month", previous, first - timedelta(days=1)))
    if day < first:
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1) - timedelta(days=1)
        options.append((f"in {day:%B}", start, end))
    return rng.choice(options)
