"""The three-way merge of a memory file: its front matter by key, its body by lines. Pure.

This is the reference of the rules `vault-tool merge-driver` applies when git merges a
memory file (a merge, a rebase, a cherry-pick, a pull). `base` is the common ancestor
(empty when there is none: both sides added the file), `ours` and `theirs` the two sides.
The rules give the same front matter, byte for byte, whichever side is ours (and the body
is git's, the same either way when it merges cleanly), so two clones merging each other's
work in opposite directions write identical files. The merge writes no time of its own.

Front matter, key by key (values compared by their canonical text, so `1` is not `true`):
- changed on one side only (the other equals the base): that side's value, as written;
  changed alike on both: that value; removed on one side and changed on the other: the
  changed value is kept; removed on one side and untouched on the other: removed.
- changed differently on both: `created` takes the earlier time and `updated` the later
  (no note; a value that is not a time falls to the next rule). Every other value (title,
  memory_type, key, status, pinned, expires_at, source, and foreign keys such as
  `aliases`, each taken whole) takes the value of the side whose `updated` is later (a
  missing or unreadable `updated` counts as the oldest; a tie goes to the value whose
  canonical text sorts first), and the losing value is recorded in a conflict note.
- `entities` are a set keyed by normalised name (case, accents, spaces) and kind;
  `facts` by (subject, predicate, object), names normalised alike; `tags` by tag name, or
  normalised text for a tag without one (`日本`), each written as its side wrote it (a list
  or one string, read as hand_made reads them, every one kept) and `supersedes` by id;
  `merge_conflicts` by the whole note. An item removed on one side and untouched on the
  other is removed; added on either side, kept; removed on one side and changed on the
  other, kept as changed (a key removed whole counts as all its items removed), but a tag
  re-spelled on one side (`Travel` to `travel`) and removed on the other is removed. Inside
  an entity or a fact changed on both sides each field (the gloss `is`, `valid_from`,
  `valid_until`, a name's spelling) is merged as a value by the rules above, a losing one
  noted as `entities[Ana/person].is` or `facts[Ana owns billing].valid_until`. An entity
  one side removed is kept while a kept fact still names it. A name written twice on one
  side is two items.
- Order, when both sides changed a list (or the keys): the items of the side whose
  `updated` is later (a tie broken by the two front matters' canonical text) in its
  order, then the other side's others in theirs. Left as it was on one side, a list comes
  out exactly as the other side wrote it.
- The conflict note: `merge_conflicts`, a list of `{field, kept, set_aside}` added to the
  front matter (after the notes already there); a person reviews it and deletes the key
  (doctor lists the memories holding one).

Text: a side whose whole front matter is the base's leaves the other side's, as written;
otherwise each key the merge left as one side wrote it keeps that side's lines (comments,
quotes), and only merged keys are written anew, as the tool writes YAML. A byte order mark
is kept as the sides agree. The body is the text after the front matter: left as it was on
one side, the other's; changed on both, merged by `git merge-file --diff3` (the driver
runs it), so conflict markers can only ever be in the body, under a whole, merged front
matter.

Not merged by these rules (a Fallback: the whole file goes to `git merge-file`): a side
that does not parse (bad YAML, a value the schema refuses, not UTF-8, empty), or a merged
front matter the schema would refuse (over 20 tags, say): reported, and the merge stops
as a conflict whatever the text merge gives; two sides with different ids (two memories,
not one) and files without front matter on every side: git's text merge decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import takewhile
from typing import Any

from vault_tool.core import front_matter, schema
from vault_tool.core.hand_made import tag_name, tag_values
from vault_tool.core.memory import BOM, parse
from vault_tool.core.text import normalize_name
from vault_tool.core.times import parse_time
from vault_tool.core.yaml_safe import dump_yaml, load_yaml
from vault_tool.errors import InvalidInput, UnparseableFile

NOTES_KEY = "merge_conflicts"
_SCHEMA = "memory.schema.json"
_MISSING: Any = object()
_BOTH: Any = object()  # changed differently on both sides
_OLDEST = datetime.min.replace(tzinfo=UTC)
_NO_SIDE = front_matter.Split({}, {}, "", "", False)  # the base of two files added alike


@dataclass(frozen=True)
class Fallback:
    """The file is merged as text: why, and whether the merge must stop (report)."""

    reason: str
    report: bool
    hint: str | None = None  # what a person can do, said beside git's conflict


@dataclass(frozen=True)
class Plan:
    """A memory merged: its front matter settled, its body settled or left to git."""

    head: str  # the byte order mark and the front matter with its --- lines ("" for none)
    bodies: tuple[str, str, str]  # base, ours, theirs
    body: str | None  # None: the body changed on both sides (git merge-file decides)

    def text(self, body: str) -> str:
        """The merged file with this body."""
        return self.head + body


def plan(base: bytes, ours: bytes, theirs: bytes, path: str) -> Plan | Fallback:
    """Merge three versions of a memory file's bytes (base empty: no common ancestor)."""
    sides = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        side = _side(data, path) if data or name != "base" else _NO_SIDE
        if isinstance(side, str):
            return Fallback(f"{name} does not parse ({side})", report=True)
        sides.append(side)
    b, o, t = sides
    if not (b.head or o.head or t.head):
        return Fallback("no side has front matter", report=False)
    ids = o.fields.get("id", _MISSING), t.fields.get("id", _MISSING)
    if _MISSING not in ids and _canon(ids[0]) != _canon(ids[1]):
        return Fallback(
            f"the sides are two memories (ids {ids[0]} and {ids[1]})",
            report=False,
            hint="two memories were added at this path on the two sides: abort (`git merge "
            "--abort`, `git rebase --abort`) and run `vault-tool sync`, which keeps both (the "
            "other beside it); or keep one here and save the other under another name",
        )
    if o.head == b.head or t.head == b.head or o.head == t.head:
        head = _pick(b.head, o.head, t.head)
    else:
        fields = merge_fields(b.fields, o.fields, t.fields)
        held = {k: fields[k] for k in _SET_KEYS if k in fields}
        if "tags" in held:  # (as parse reads them: by tag name, not as written)
            held["tags"] = list(dict.fromkeys(filter(None, map(tag_name, held["tags"]))))
        try:  # the keys held to the schema, as merged (parse caps tags at 20 unseen)
            schema.validate(held, _SCHEMA)
        except InvalidInput as problem:
            return Fallback(f"the merged front matter is not valid: {problem}", report=True)
        head = _render(fields, (o, t, b))
    prefix = BOM if _pick(b.bom, o.bom, t.bom) else ""
    if head:
        try:
            parse(prefix + head + "\n", path)
        except UnparseableFile as problem:
            return Fallback(f"the merged front matter is not valid: {problem}", report=True)
    bodies = (b.body, o.body, t.body)
    settled = _pick(*bodies) if o.body == b.body or t.body == b.body or o.body == t.body else None
    return Plan(prefix + head, bodies, settled)


def merge_fields(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any]:
    """Three front matter mappings merged by the module's rules, notes included."""
    return _FieldMerge(ours, theirs, _SET_KEYS).merge(base)


def plan_list(base: bytes, ours: bytes, theirs: bytes, path: str) -> bytes | Fallback:
    """Three versions of a work state list (state/<project>/<name>.yaml) merged: `items`
    item by item, as the module merges tags (each item keyed by its whole value, a
    duplicate counted), `updated` the later, any other key by the value rule; the comment
    lines the file opens with, as the sides agree. Two clones writing one list never stop
    a sync, and the same items on both sides merge to them."""
    sides = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        try:
            text = data.decode("utf-8")
            fields = load_yaml(text, path) if text.strip() else {}
        except (UnicodeDecodeError, UnparseableFile) as problem:
            return Fallback(f"{name} does not parse ({problem})", report=True)
        lines = text.splitlines(True)
        sides.append((fields, "".join(takewhile(lambda line: line.startswith("#"), lines))))
    (b, b_head), (o, o_head), (t, t_head) = sides
    fields = _FieldMerge(o, t, _LIST_KEYS).merge(b)
    return (_pick(b_head, o_head, t_head) + dump_yaml(fields)).encode("utf-8")


class _FieldMerge:
    """One merge of two front matters: which side is newer, and the notes taken so far."""

    def __init__(
        self, ours: dict[str, Any], theirs: dict[str, Any], set_keys: dict[str, _SetKey]
    ) -> None:
        self.ours, self.theirs, self.set_keys = ours, theirs, set_keys
        newer_o, newer_t = _time(ours.get("updated")), _time(theirs.get("updated"))
        self.newer = (newer_o > newer_t) - (newer_o < newer_t)  # 1: ours is the newer side
        self.ours_first = self.newer > 0 or (self.newer == 0 and _canon(ours) <= _canon(theirs))
        self.notes: list[dict[str, Any]] = []
        self.fact_names: set[str] = set()

    def merge(self, base: dict[str, Any]) -> dict[str, Any]:
        keys = self._ordered(list(self.ours), list(self.theirs))
        values, notes = {}, {}
        # Facts first: an entity one side removed stays while a kept fact names it.
        for key in sorted(keys, key=lambda k: k != "facts"):
            taken = len(self.notes)
            values[key] = self._key(key, base.get(key, _MISSING))
            notes[key] = self.notes[taken:]
            if key == "facts" and isinstance(values[key], list):
                self.fact_names = {n for fact in values[key] for n in _fact_names(fact)}
        if "entities" in values:
            values["entities"] = self._with_named(values["entities"])
        merged = {k: values[k] for k in keys if values[k] is not _MISSING}
        new_notes = [note for key in keys for note in notes[key]]
        if new_notes:
            kept = merged.get(NOTES_KEY) or []
            known = {_canon(note) for note in kept}
            merged[NOTES_KEY] = kept + [n for n in new_notes if _canon(n) not in known]
        return merged

    def _key(self, key: str, b: Any) -> Any:
        o, t = self.ours.get(key, _MISSING), self.theirs.get(key, _MISSING)
        if (settled := _one_sided(b, o, t)) is not _BOTH:
            return settled
        if key in self.set_keys:
            return self._set(key, *(self.set_keys[key][0](v) for v in (b, o, t))) or _MISSING
        return self._value(key, o, t)

    def _value(self, field: str, o: Any, t: Any) -> Any:
        """A value both sides changed differently: a removal loses, else _scalar decides."""
        if _MISSING in (o, t):
            return t if o is _MISSING else o
        return self._scalar(field, o, t)

    def _scalar(self, field: str, o: Any, t: Any) -> Any:
        times = _time(o, None), _time(t, None)
        if field in ("created", "updated") and None not in times and times[0] != times[1]:
            earlier = o if times[0] < times[1] else t
            return earlier if field == "created" else (t if earlier is o else o)
        kept = self._newer(o, t)
        lost = t if kept is o else o
        if field not in ("created", "updated") or None in times:
            self.notes.append({"field": field, "kept": kept, "set_aside": lost})
        return kept

    def _newer(self, o: Any, t: Any) -> Any:
        """The newer side's value; a tie goes to the one whose canonical text sorts first."""
        if self.newer:
            return o if self.newer > 0 else t
        return min((o, t), key=_canon)

    def _set(self, key: str, b: list[Any], o: list[Any], t: list[Any]) -> list[Any]:
        key_of, label = self.set_keys[key][1], self.set_keys[key][2]
        base, ours, theirs = _keyed(b, key_of), _keyed(o, key_of), _keyed(t, key_of)
        merged = []
        for k in self._ordered(list(ours), list(theirs)):
            bi, oi, ti = base.get(k, _MISSING), ours.get(k, _MISSING), theirs.get(k, _MISSING)
            settled = _one_sided(bi, oi, ti)
            if settled is _BOTH and _MISSING in (oi, ti) and key == "tags":
                settled = _MISSING  # a tag is only its name: re-spelled is not changed
            elif settled is _BOTH and _MISSING in (oi, ti):
                settled = ti if oi is _MISSING else oi  # removed on one side, changed on the other
            elif settled is _BOTH and not isinstance(oi, dict):
                settled = self._newer(oi, ti)  # a tag spelled anew on both sides: no note
            elif settled is _BOTH:
                shown = label(bi) if bi is not _MISSING else min(label(oi), label(ti))
                settled = self._item(f"{key}[{shown}]", bi, oi, ti)
            if settled is not _MISSING:
                merged.append(settled)
        return merged

    def _item(self, name: str, b: Any, o: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
        b = b if isinstance(b, dict) else {}
        item = {}
        for field in self._ordered(list(o), list(t)):
            bf, of, tf = b.get(field, _MISSING), o.get(field, _MISSING), t.get(field, _MISSING)
            value = _one_sided(bf, of, tf)
            if value is _BOTH:
                value = self._value(f"{name}.{field}", of, tf)
            if value is not _MISSING:
                item[field] = value
        return item

    def _with_named(self, entities: Any) -> Any:
        """The merged entities and any entity a side removed that a kept fact still names."""
        kept = _as_list(entities)
        names = {normalize_name(e["n"]) for e in kept}
        sides = [_as_list(side.get("entities")) for side in (self.ours, self.theirs)]
        for entity in sides[0] + sides[1] if self.ours_first else sides[1] + sides[0]:
            if normalize_name(entity["n"]) in self.fact_names - names:
                kept = [*kept, entity]
                names.add(normalize_name(entity["n"]))
        return kept or entities

    def _ordered(self, ours: list[Any], theirs: list[Any]) -> list[Any]:
        first, second = (ours, theirs) if self.ours_first else (theirs, ours)
        seen = set(first)
        return first + [k for k in second if k not in seen]


def _one_sided(b: Any, o: Any, t: Any) -> Any:
    """The value when at most one side changed it (or both alike), else _BOTH."""
    if _canon(o) == _canon(t) or _canon(t) == _canon(b):
        return o
    return t if _canon(o) == _canon(b) else _BOTH


def _fact_names(fact: Any) -> tuple[str, str]:
    return normalize_name(fact["subject"]), normalize_name(fact["object"])


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _tags(value: Any) -> list[Any]:
    # As hand_made reads them, but every one (its cap of 20 would drop some unseen), each
    # as its side wrote it: `Travel` stays `Travel`, `日本` stays (its tag name is none).
    kept: dict[str, str] = {}
    for tag in tag_values(None if value is _MISSING else value):
        kept.setdefault(_tag_key(tag), tag)
    return list(kept.values())


def _tag_key(tag: str) -> str:
    """A tag as two spellings of it compare: its tag name, else its normalised text."""
    return tag_name(tag) or normalize_name(tag.strip().lstrip("#"))


# A key merged as a set: (its items from a value, an item's key, an item's label).
_SetKey = tuple[Callable[[Any], list[Any]], Callable[[Any], Any], Callable]
_SET_KEYS: dict[str, _SetKey] = {
    "entities": (
        _as_list,
        lambda e: (normalize_name(e["n"]), e["kind"]),
        lambda e: f"{e['n']}/{e['kind']}",
    ),
    "facts": (
        _as_list,
        lambda f: (_fact_names(f)[0], f["predicate"], _fact_names(f)[1]),
        lambda f: f"{f['subject']} {f['predicate']} {f['object']}",
    ),
    "tags": (_tags, _tag_key, str),
    "supersedes": (_as_list, lambda memory_id: memory_id, str),
    NOTES_KEY: (_as_list, lambda note: _canon(note), str),
}


_LIST_KEYS: dict[str, _SetKey] = {"items": (_as_list, lambda i: _canon(i), lambda i: _canon(i))}


def _keyed(items: list[Any], key_of: Callable[[Any], Any]) -> dict[Any, Any]:
    """Items by key; a key written twice on one side is kept twice (its nth occurrence)."""
    keyed: dict[Any, Any] = {}
    for item in items:
        key = key_of(item)
        keyed[(key, sum(k == key for k, _ in keyed))] = item
    return keyed


# --- reading and writing the sides -------------------------------------------------------


def _side(data: bytes, path: str) -> front_matter.Split | str:
    """A side's front matter (as values and as written) and body, or why it does not parse."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    try:
        parse(text, path)
    except UnparseableFile as problem:
        return str(problem)
    return front_matter.split(text, path)


def _render(fields: dict[str, Any], sides: tuple[front_matter.Split, ...]) -> str:
    """Merged front matter as text, keeping the lines each unchanged key was written in."""
    if not fields:
        return ""
    for side in sorted(sides[:2], key=lambda s: s.head):
        if _ordered_canon(side.fields) == _ordered_canon(fields):
            return side.head
    parts = []
    for key, value in fields.items():
        written = sorted(
            s.blocks[key]
            for s in sides
            if s.blocks and key in s.blocks and _canon(s.fields[key]) == _canon(value)
        )
        block = written[0] if written else dump_yaml({key: value})
        parts.append(block if block.endswith("\n") else block + "\n")
    text = "".join(parts)
    try:
        joined = _ordered_canon(load_yaml(text, "merged")) == _ordered_canon(fields)
    except UnparseableFile:
        joined = False
    if not joined:
        text = dump_yaml(fields)  # the kept lines did not join up: write it all anew
    return f"---\n{text}---\n"


def _pick(base: Any, ours: Any, theirs: Any) -> Any:
    """Three-way choice of a value the two sides change as a whole."""
    if ours == base:
        return theirs
    return ours if theirs in (base, ours) else min(ours, theirs)


def _canon(value: Any) -> str:
    if value is _MISSING:
        return "\0missing"
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except TypeError:  # keys of several types (`1:` beside `a:`) do not sort
        return json.dumps(value, ensure_ascii=False, default=str)


def _ordered_canon(fields: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, _canon(v)) for k, v in fields.items()]


def _time(value: Any, unreadable: Any = _OLDEST) -> Any:
    """A front matter time as an instant (`unreadable` when it is not one)."""
    try:
        return parse_time(value) if isinstance(value, str) else unreadable
    except ValueError:
        return unreadable
