"""Random three-way merges of memory files and work state lists, in both directions.

Each round takes a base note (a person's shape: comments, their own `status: draft`, tags
in their own case and script, a list or one string) and edits it twice at random, as two
clones would: tags added, re-spelled or removed, facts and entities added or removed,
glosses and validity changed, the body edited, `updated` moved. The merge must give the
same front matter whichever side is ours, parse, keep every item a side added, drop every
item a side removed that the other left alone, and leave the person's own values and the
lines of keys no side changed as written. Counts go to docs/reliability.md.
VAULT_TOOL_MERGE_ROUNDS sets the number of rounds (CI: 1,000).
"""

from __future__ import annotations

import os
import random
from typing import Any

from vault_tool.core.hand_made import tag_name, tag_values
from vault_tool.core.memory import parse
from vault_tool.core.merge import Plan, plan, plan_list
from vault_tool.core.text import normalize_name
from vault_tool.core.yaml_safe import dump_yaml, load_yaml

ROUNDS = int(os.environ.get("VAULT_TOOL_MERGE_ROUNDS", "1000"))
PATH = "notes/-how-we-deploy.md"
TAGS = ["Travel", "travel", "日本", "東京", "urgent", "Ops", "ops/infra", "café", "2024"]
NAMES = ["Ana", "Ben", "Zoë", "staging", "billing", "東京チーム"]
PREDICATES = ["owns", "runs_on", "deploys", "reviews"]


def _key(tag: str) -> str:
    return tag_name(tag) or normalize_name(tag)


def _fact_key(fact: dict[str, str]) -> tuple[str, str, str]:
    return normalize_name(fact["subject"]), fact["predicate"], normalize_name(fact["object"])


def _entity_key(entity: dict[str, str]) -> tuple[str, str]:
    return normalize_name(entity["n"]), entity["kind"]


def _base(chooser: random.Random) -> dict[str, Any]:
    names = chooser.sample(NAMES, 3)
    return {
        "title": "How we deploy",
        "status": "draft",
        "entities": [{"n": n, "kind": "thing", "is": f"what we call {n}"} for n in names],
        "facts": [{"subject": names[0], "predicate": "owns", "object": names[1]}],
        "tags": chooser.sample(TAGS, 3),
        "updated": "2026-12-01T00:00:00Z",
    }


def _text(fields: dict[str, Any], body: str, string_tags: bool = False) -> bytes:
    shown = dict(fields)
    if string_tags and all(" " not in t and "," not in t for t in shown["tags"]):
        shown["tags"] = ", ".join(shown["tags"])
    yaml_text = dump_yaml(shown).replace("status: draft\n", "status: draft  # mine\n")
    return f"---\n{yaml_text}---\n{body}".encode()


def _edited(base: dict[str, Any], chooser: random.Random) -> dict[str, Any]:
    side = {k: [dict(i) if isinstance(i, dict) else i for i in v] if isinstance(v, list) else v
            for k, v in base.items()}  # fmt: skip
    for _ in range(chooser.randint(1, 4)):
        edit = chooser.randrange(8)
        if edit == 0:  # a tag added (perhaps a spelling of one there)
            tag = chooser.choice(TAGS)
            if _key(tag) not in {_key(t) for t in side["tags"]}:
                side["tags"].append(tag)
        elif edit == 1 and side["tags"]:  # a tag removed
            side["tags"].pop(chooser.randrange(len(side["tags"])))
        elif edit == 2 and side["tags"]:  # a tag re-spelled
            at = chooser.randrange(len(side["tags"]))
            side["tags"][at] = side["tags"][at].swapcase()
        elif edit == 3:  # a fact added, its names declared
            subject, obj = chooser.sample(NAMES, 2)
            fact = {"subject": subject, "predicate": chooser.choice(PREDICATES), "object": obj}
            if _fact_key(fact) not in {_fact_key(f) for f in side["facts"]}:
                side["facts"].append(fact)
            for name in (subject, obj):
                if (normalize_name(name), "thing") not in {
                    _entity_key(e) for e in side["entities"]
                }:
                    side["entities"].append({"n": name, "kind": "thing", "is": f"our {name}"})
        elif edit == 4 and side["facts"]:  # a fact removed
            side["facts"].pop(chooser.randrange(len(side["facts"])))
        elif edit == 5 and side["entities"]:  # a gloss changed
            at = chooser.randrange(len(side["entities"]))
            side["entities"][at]["is"] = chooser.choice(["lead", "on call", "the old one"])
        elif edit == 6 and side["facts"]:  # a validity changed
            side["facts"][0]["valid_until"] = chooser.choice(["2027-01-01", "2028-06-30"])
        else:
            side["updated"] = chooser.choice(["2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"])
    return side


def _checked_merge(base: bytes, ours: bytes, theirs: bytes) -> dict[str, Any]:
    one, other = plan(base, ours, theirs, PATH), plan(base, theirs, ours, PATH)
    assert isinstance(one, Plan) and isinstance(other, Plan), (one, other)
    assert one.head == other.head, "the merge depends on its direction"
    parse(one.text(one.body or "x\n"), PATH)
    return load_yaml(one.head.split("---\n")[1], PATH)


def _kept(key_of, base: list, ours: list, theirs: list, merged: list) -> None:
    """Added on a side: there. Removed on a side, the other's left alone: gone."""
    b, o, t, m = ({key_of(i) for i in items} for items in (base, ours, theirs, merged))
    assert (o - b) | (t - b) <= m, "an item a side added was lost"
    assert (o & t) <= m, "an item both sides kept was lost"
    removed = (b - o) & (b - t)
    assert not removed & m, "an item both sides removed came back"


def test_random_three_way_merges_lose_nothing_in_either_direction():
    chooser = random.Random(42)
    merges = facts = tags = entities = 0
    for _ in range(ROUNDS):
        base = _base(chooser)
        ours, theirs = _edited(base, chooser), _edited(base, chooser)
        body = "# How we deploy\n\nFridays only.\n"
        texts = (_text(side, body, chooser.random() < 0.3) for side in (base, ours, theirs))
        merged = _checked_merge(*texts)
        merges += 2
        assert merged["status"] == "draft"
        _kept(_fact_key, base["facts"], ours["facts"], theirs["facts"], merged.get("facts", []))
        _kept(_entity_key, base["entities"], ours["entities"], theirs["entities"],
              merged.get("entities", []))  # fmt: skip
        merged_tags = tag_values(merged.get("tags"))
        _kept(_key, base["tags"], ours["tags"], theirs["tags"], merged_tags)
        for tag in merged_tags:  # each written as a side wrote it
            assert tag in ours["tags"] or tag in theirs["tags"] or tag in base["tags"], tag
        facts += len(merged.get("facts", []))
        tags += len(merged_tags)
        entities += len(merged.get("entities", []))
    print(f"\n{merges} merges: {facts} facts, {tags} tags, {entities} entities, 0 lost")


def test_random_three_way_merges_of_work_state_lists_lose_nothing():
    chooser = random.Random(7)
    pool = ["ship docs", "test hooks", "fix CI", "tag release", {"task": "x", "done": False}]
    for _ in range(ROUNDS):
        base = chooser.sample(pool, 3)
        sides = []
        for _side in range(2):
            items = [i for i in base if chooser.random() < 0.7]
            items += [i for i in chooser.sample(pool, 2) if i not in items]
            sides.append(items)
        texts = [
            (
                "# Work state\n" + dump_yaml({"updated": f"2026-12-0{n}T00:00:00Z", "items": i})
            ).encode()
            for n, i in ((1, base), (2, sides[0]), (3, sides[1]))
        ]
        merged = plan_list(*texts, "state/ops/todo.yaml")
        assert merged == plan_list(texts[0], texts[2], texts[1], "state/ops/todo.yaml")
        assert isinstance(merged, bytes)
        items = load_yaml(merged.decode(), "state/ops/todo.yaml")["items"]

        def key(item: Any) -> str:
            return repr(sorted(item.items())) if isinstance(item, dict) else item

        _kept(key, base, sides[0], sides[1], items)
