"""Folders of Markdown notes: plain (Obsidian-style) and Basic Memory."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_tool.core import hand_made, ids, schema
from vault_tool.core.links import extract as extract_links
from vault_tool.core.links import prose
from vault_tool.core.memory import KEY_ORDER, MAX_FILE_BYTES, Memory
from vault_tool.core.times import stamp_time
from vault_tool.core.yaml_safe import load_yaml
from vault_tool.errors import InvalidInput, UnparseableFile
from vault_tool.ops.importers.items import (
    ENTITIES_MAX,
    FACTS_MAX,
    GLOSS_MAX,
    NAME_MAX,
    Item,
    Progress,
    Skipped,
    Source,
    Unusable,
    date_field,
    kind_of,
    normalize_tag,
    one_line,
    shorten,
    snake_case,
    text_field,
)

# Basic Memory: `- [category] text #tag (context)` and `- relation_type [[Target]] (context)`.
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?P<category>[^\[\]]+)\]\s+(?P<text>\S.*?)\s*$")
_RELATION = re.compile(
    r"^\s*[-*]\s+(?P<rel>[^\s\[\]][^\[\]]*?)\s+\[\[(?P<target>[^\[\]|#]+)(?:[|#][^\[\]]*)?\]\]"
    r"\s*(?:\((?P<context>[^()]*)\))?\s*$"
)
_TRAILING_CONTEXT = re.compile(r"\s*\(([^()]*)\)\s*$")
_TRAILING_TAGS = re.compile(r"(?:\s+#[\w/-]+)+\s*$")


# --- Markdown folders (Obsidian-style) ---------------------------------------------------


def read_markdown(
    files: list[tuple[str, Path]],
    progress: Progress | None = None,
    history: dict[str, tuple[str, str]] | None = None,
) -> Source:
    """Plain Markdown notes, each kept as it is: its body unchanged, its front matter's keys
    kept. The title is front matter `title`, else an opening H1, else the file name;
    tags come from front matter (inline #tags stay in the body, where the vault reads them).
    Dates: front matter, else history (label -> first and last commit), else the file's
    time. No entities or facts are made."""
    source = Source()
    history = history or {}
    for done, (label, text, mtime) in enumerate(_texts(files, source), 1):
        try:
            meta, body = _split(text, label)
            _require_text(text, body)
            notes: list[str] = []
            # A person's own status or id stays as written (the vault reads such a note
            # leniently); a file with the tool's id keeps the tool's contract.
            in_place = () if ids.is_ulid(str(meta.get("id", ""))) else _PERSON_KEYS
            ours, extra = _front_matter(meta, notes, in_place)
            ours.setdefault("memory_type", _memory_type_of(text_field(meta.get("type")) or ""))
            title = text_field(meta.get("title")) or hand_made.title_of(body, label)
            first, last = history.get(label, (mtime, mtime))
            created = ours.pop("created", None) or date_field(meta.get("date")) or first
            updated = ours.pop("updated", None) or date_field(meta.get("modified")) or last
            memory = _memory(ours, extra, title, body, meta, created, notes, inline=False)
            source.items.append(
                Item(
                    label,
                    memory.with_changes(updated=max(created, updated)),
                    notes=notes,
                    keeps_shape=True,
                    links=extract_links(body),
                )
            )
        except Unusable as problem:
            source.skipped.append(Skipped(label, str(problem)))
        if progress:
            progress(done, len(files))
    return source


def _require_text(text: str, body: str) -> None:
    """Refuse a note with nothing to remember."""
    if not text.strip():
        raise Unusable("the file is empty")
    if not body.strip():
        raise Unusable("it has no text after its front matter")


# --- Basic Memory -----------------------------------------------------------------------


def read_basic_memory(
    files: list[tuple[str, Path]], project: str, progress: Progress | None = None
) -> Source:
    """A Basic Memory folder: each note is an entity; `- [category] text` observations and
    `- relation [[Target]]` relations become entities and facts about it."""
    source = Source()
    parsed: list[tuple[str, dict[str, Any], str, str]] = []
    for label, text, mtime in _texts(files, source):
        try:
            meta, body = _split(text, label)
            _require_text(text, body)
        except Unusable as problem:
            source.skipped.append(Skipped(label, str(problem)))
            continue
        parsed.append((label, meta, body, mtime))
    # Relation targets are resolved against the notes of the folder, so that an entity gets
    # the same kind and gloss in every memory that names it.
    known: dict[str, tuple[str, str]] = {}
    for label, meta, body, _ in parsed:
        title = _bm_title(meta, body, label)
        identity = _bm_identity(text_field(meta.get("type")) or "note", project)
        for name in (title, text_field(meta.get("permalink")), Path(label).stem):
            if name:
                known.setdefault(name.lower(), identity)
    for done, (label, meta, body, mtime) in enumerate(parsed, 1):
        try:
            notes: list[str] = []
            ours, extra = _front_matter(meta, notes)
            title = _bm_title(meta, body, label)
            note_type = text_field(meta.get("type")) or "note"
            entities, facts = _bm_structure(body, title, note_type, project, known, notes)
            ours.setdefault("memory_type", _memory_type_of(note_type))
            ours["entities"], ours["facts"] = entities, facts
            created = ours.pop("created", None) or mtime
            memory = _memory(ours, extra, title, body, meta, created, notes)
            source.items.append(Item(label, memory, notes=notes))
        except Unusable as problem:
            source.skipped.append(Skipped(label, str(problem)))
        if progress:
            progress(done, len(parsed))
    return source


def _bm_title(meta: dict[str, Any], body: str, label: str) -> str:
    return text_field(meta.get("title")) or _first_h1_anywhere(body) or Path(label).stem


def _bm_identity(note_type: str, project: str) -> tuple[str, str]:
    gloss = shorten(f"{one_line(note_type)} in the Basic Memory project {project}", GLOSS_MAX)
    return kind_of(note_type, "note"), gloss


def _bm_structure(
    body: str,
    title: str,
    note_type: str,
    project: str,
    known: dict[str, tuple[str, str]],
    notes: list[str],
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Entities and facts of one Basic Memory note."""
    me = shorten(title, NAME_MAX)
    kind, gloss = _bm_identity(note_type, project)
    entities: dict[str, dict[str, str]] = {me: {"n": me, "kind": kind, "is": gloss}}
    facts: list[dict[str, str]] = []
    dropped = 0
    for line in _prose_lines(body):
        relation = _RELATION.match(line)
        observation = None if relation else _OBSERVATION.match(line)
        if relation:
            target = one_line(relation["target"])
            name = shorten(target, NAME_MAX)
            t_kind, t_gloss = known.get(target.lower()) or _bm_identity("note", project)
            new = {"n": name, "kind": t_kind, "is": t_gloss}
            predicate = snake_case(relation["rel"], "relates_to")
        elif observation and observation["category"].strip().lower() not in ("", "x"):
            category = one_line(observation["category"])
            text = _TRAILING_CONTEXT.sub("", observation["text"])
            text = _TRAILING_TAGS.sub("", text).strip() or text
            name = shorten(text, NAME_MAX)
            about = shorten(f"{category} observation about {title}", GLOSS_MAX)
            new = {"n": name, "kind": "observation", "is": about}
            predicate = snake_case(f"has_{category}", "has_observation")
        else:
            continue
        if (name not in entities and len(entities) >= ENTITIES_MAX) or len(facts) >= FACTS_MAX:
            dropped += 1
            continue
        entities.setdefault(name, new)
        fact = {"subject": me, "predicate": predicate, "object": name}
        if fact not in facts:
            facts.append(fact)
    if dropped:
        notes.append(
            f"{dropped} observations or relations past the limits ({ENTITIES_MAX} entities, "
            f"{FACTS_MAX} facts) stay in the body only"
        )
    return list(entities.values()), facts


# --- reading files -----------------------------------------------------------------------


def markdown_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(label, path) of every .md file under root (or root itself), skipping dot folders
    and dotfiles, in a stable order. Symlinked files are listed (and skipped when read)."""
    if root.is_file():
        yield root.name, root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(folder) / name
            if name.startswith(".") or not name.lower().endswith(".md"):
                continue
            yield path.relative_to(root).as_posix(), path


def other_files(root: Path) -> list[str]:
    """Labels of the files under root that are not notes (attachments), outside dot folders:
    they are not imported, and the report says so."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and not name.lower().endswith(".md"):
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return found


def _texts(files: list[tuple[str, Path]], source: Source) -> Iterator[tuple[str, str, str]]:
    """(label, text, modification time) of each file that is readable UTF-8 of a sane size."""
    for label, path in files:
        if path.is_symlink():
            source.skipped.append(Skipped(label, "is a symbolic link; links are not followed"))
            continue
        try:
            with path.open("rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)  # (never all of a far larger one)
                size = os.fstat(file.fileno()).st_size
        except OSError as problem:
            source.skipped.append(Skipped(label, f"cannot be read: {problem.strerror}"))
            continue
        if len(data) > MAX_FILE_BYTES:
            source.skipped.append(Skipped(label, f"too large ({max(size, len(data))} bytes)"))
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            source.skipped.append(Skipped(label, "is not UTF-8 text"))
            continue
        mtime = stamp_time(path.stat().st_mtime)
        yield label, text.replace("\r\n", "\n"), mtime


def _split(text: str, label: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; no front matter gives {}."""
    import frontmatter

    handler = frontmatter.YAMLHandler()
    if not handler.detect(text):
        return {}, text
    try:
        raw, body = handler.split(text)
        return load_yaml(raw, label), body
    except ValueError:
        raise Unusable("front matter is not closed (no line '---' after it)") from None
    except UnparseableFile as problem:
        where = f"line {problem.line}: " if problem.line else ""
        raise Unusable(f"{where}{problem.reason}") from None


def _prose_lines(body: str) -> list[str]:
    """Lines outside code (fenced blocks and code spans blanked), as the vault reads links."""
    return prose(body).splitlines()


def _first_h1_anywhere(body: str) -> str | None:
    for line in _prose_lines(body):
        heading = hand_made.atx_heading(line)
        if heading and heading[0] == 1 and heading[1].strip():
            return heading[1].strip()
    return None


# Front matter keys the readers consume themselves, or that are ours with a fixed meaning.
_CONSUMED = {"title", "tags"}
_OURS = set(KEY_ORDER) - _CONSUMED


# Keys of ours that a person's note may use in a way of its own (`status: in-progress`,
# `id: 42`): kept as written when in_place, as the vault reads such a note (hand_made.py).
_PERSON_KEYS = tuple(k for k in hand_made.CONVENTION_KEYS if k not in _CONSUMED)


def _front_matter(
    meta: dict[str, Any], notes: list[str], in_place: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split foreign front matter into our fields (when their values are valid for us) and
    the keys we keep as they are. A key of ours with a value we cannot use is kept under
    `imported_<key>` (under its own name if in in_place), so nothing a person wrote is
    lost."""
    ours: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for raw_key, value in meta.items():
        key = str(raw_key)
        if key in _CONSUMED:
            continue
        if key not in _OURS:
            extra[key] = value
            continue
        usable = _usable(key, value)
        if usable is None and key in in_place:
            extra[key] = value
            notes.append(f"front matter {key}: {value!r} is not vault-tool's; kept as written")
        elif usable is None:
            extra[f"imported_{key}"] = value
            notes.append(f"front matter {key}: {value!r} is not valid here; kept as imported_{key}")
        else:
            ours[key] = usable
    return ours, extra


def _usable(key: str, value: Any) -> Any:
    if key in ("created", "updated"):
        return date_field(value)
    if key == "id" and not (isinstance(value, str) and ids.is_ulid(value)):
        return None
    try:
        schema.validate({key: value}, "memory.schema.json")
    except InvalidInput:
        return None
    return value


def _memory_type_of(note_type: str) -> str:
    lowered = note_type.strip().lower()
    return lowered if lowered in schema.memory_types() else "note"


def _memory(
    ours: dict[str, Any],
    extra: dict[str, Any],
    title: str,
    body: str,
    meta: dict[str, Any],
    created: str,
    notes: list[str],
    *,
    inline: bool = True,
) -> Memory:
    """A Memory from our front matter fields, the foreign ones, and what the reader found;
    with inline, the body's #tags join the front matter's."""
    tags: list[str] = []
    for raw in [
        *hand_made.tag_values(meta.get("tags")),
        *(hand_made.inline_tags(body) if inline else ()),
    ]:
        tag = normalize_tag(raw)
        if tag is None:
            notes.append(f"tag {raw!r} has no usable characters; left out")
        elif tag not in tags:
            tags.append(tag)
    return Memory.from_mapping(
        ours, body, title=title, tags=tuple(tags), created=created, extra=extra
    )
