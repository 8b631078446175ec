"""What each commit says: one subject template per kind of change, the body, the trailers.

The history of a vault is read like a changelog (`git log --oneline`), so every commit the
tool makes takes its message from here: the subject names what happened and to which
memory; a commit that does not name its one memory in the subject (a batch, an import, an
expiry, an ontology rewrite) lists each memory in its body, one `- <type>: <title> (<id>)`
line each; the trailers say which memories (`Memory-Id:`), where a moved file was
(`Moved-From:`) and who wrote it (`Client:`). docs/history.md lists every template; a
test holds it to TEMPLATES.

Titles and paths come from files a person or an agent wrote: a line break in one would end
the subject early and could forge a trailer, so every such field is written escaped
(core/printable.py), as `\\n`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vault_tool.core import ids
from vault_tool.core.memory import Memory, parse
from vault_tool.core.printable import escape
from vault_tool.errors import UnparseableFile

# name -> (subject template, when it is used). Fields: {type}, {title}, {old}, {new},
# {version} (a sha's first 10 digits), {source}, {what}; {memories} is "1 memory" or
# "<n> memories".
TEMPLATES: dict[str, tuple[str, str]] = {
    "initialize": ("Initialize vault", "`vault-tool init`: the vault's first commit"),
    "create": ("Create {type}: {title}", "remember creates one memory"),
    "create_batch": (
        "Create {memories}",
        "remember creates several memories in one call (a batch)",
    ),
    "update": ("Update {type}: {title}", "remember updates a memory"),
    "retitle": (
        "Update {type}: {title} (was {old})",
        "remember updates a memory and changes its title ({old}: the title it had)",
    ),
    "delete": ("Delete {type}: {title}", "remember deletes a memory"),
    "restore": (
        "Restore {type}: {title} to {version}",
        "`vault-tool restore`: a memory's earlier version written back",
    ),
    "revert": (
        "Revert {memories}: {what}",
        "`vault-tool revert`: every memory a range of commits changed put back as it was before "
        "({what}: the range, or `<client>'s <n> commits`); the body lists them",
    ),
    "hand_edit": ("Hand edit: {title}", "a person made or changed a file"),
    "hand_delete": ("Delete {type}: {title} (hand edit)", "a person deleted a file"),
    "hand_edit_batch": (
        "Hand edit {memories}",
        "a person changed several memories in one quiet period (a rename in an editor that "
        "rewrote the links to it, a `sed` over many notes): made, changed, deleted or moved",
    ),
    "move": (
        "Move {type}: {title} ({old} -> {new})",
        "a person moved or renamed a file (an editor, `mv`, `git mv`)",
    ),
    "import": ("Import {memories} from {source}", "`vault-tool import`"),
    "expire": ("Expire {memories}", "`vault-tool expire`: memories whose expires_at passed"),
    "dismiss": ("Dismiss {type}: {title}", "`vault-tool dismiss`"),
    "undismiss": ("Undismiss {type}: {title}", "`vault-tool undismiss`"),
    "work_state": (
        "Work state: {what}",
        "work_state_write / `vault-tool state set`: a named list replaced whole ({what}: "
        "`acme/todo (3 items)`)",
    ),
    "add_rule": ("Add rule: {title}", "add_rule / `vault-tool rules add`"),
    "confirm_rule": (
        "Confirm rule: {title}",
        "confirm_rule / `vault-tool rules confirm`: re-checked against its evidence",
    ),
    "rename_entity": (
        "Rename entity: {old} -> {new} ({memories})",
        "`vault-tool rename-entity`",
    ),
    "merge_entity": ("Merge entity: {old} -> {new} ({memories})", "`vault-tool merge-entity`"),
    "rename_predicate": (
        "Rename predicate: {old} -> {new} ({memories})",
        "`vault-tool rename-predicate`",
    ),
    "sync": (
        "Sync: merge {what} from {source}",
        "`vault-tool sync`: the remote branch's commits ({what}: `3 commits`) merged; the body "
        "names memories kept edited over a deletion and bodies left with conflict markers",
    ),
    "repair": (
        "Repair: commit interrupted write of {what}",
        "opening a vault (while git is busy: the first write once it is free) finishes a "
        "write a crash cut short ({what}: its title, or "
        "{memories}); the body and trailers are the interrupted write's",
    ),
}
# The verbs of the subjects that name a memory's type (`<Verb> <type>: <title>`): what
# `vault-tool log --type` looks for.
TYPED_VERBS = ("Create", "Update", "Delete", "Restore", "Move", "Dismiss", "Undismiss")


@dataclass(frozen=True)
class Entry:
    """One memory as a commit names it."""

    memory_type: str
    title: str
    memory_id: str

    def line(self) -> str:
        """Its line in a batch commit's body."""
        return f"- {escape(self.memory_type)}: {escape(self.title)} ({escape(self.memory_id)})"


def entry(memory: Memory, path: str) -> Entry:
    """The entry of a parsed memory at path."""
    return Entry(memory.memory_type, memory.title, memory.id or ids.path_id(path))


def entry_of_file(data: bytes | None, path: str, memory_id: str | None = None) -> Entry:
    """The entry of a file's bytes (a file that is gone, as its last version held it); a
    file that does not parse is named by its path, as type `file`."""
    try:
        found = entry(parse((data or b"").decode("utf-8"), path), path)
    except (UnparseableFile, UnicodeDecodeError):
        return Entry("file", path, memory_id or ids.path_id(path))
    return found if memory_id is None else Entry(found.memory_type, found.title, memory_id)


def memories(n: int) -> str:
    """The count as a subject says it: `1 memory`, `3 memories`."""
    return f"{n} {'memory' if n == 1 else 'memories'}"


def subject(name: str, of: Entry | None = None, **fields: object) -> str:
    """The subject of template name, about the memory `of` and the other fields, escaped."""
    values = {k: escape(v) for k, v in fields.items()}
    if of is not None:
        values.update(type=escape(of.memory_type), title=escape(of.title))
    return TEMPLATES[name][0].format(**values)


def message(
    subject_line: str,
    memory_ids: Sequence[str],
    client: str,
    *,
    listed: Iterable[Entry] = (),
    moved_from: str | Sequence[str] | None = None,
    reason: str | None = None,
) -> str:
    """Subject, the body listing `listed` (if any) and the reason given for the change (if
    any), then the trailers: `git log --grep 'Client: x'` and `Memory-Id:` find it."""
    parts = [escape(subject_line)]
    body = "\n".join(e.line() for e in listed)
    if body:
        parts.append(body)
    if reason:
        parts.append(f"Reason: {escape(reason)}")
    trailers = [f"Memory-Id: {escape(m)}" for m in memory_ids]
    for old in [moved_from] if isinstance(moved_from, str) else moved_from or ():
        trailers.append(f"Moved-From: {escape(old)}")
    parts.append("\n".join([*trailers, f"Client: {escape(client)}"]))
    return "\n\n".join(parts) + "\n"


def about(
    subject_line: str, entries: Sequence[Entry], client: str, reason: str | None = None
) -> str:
    """A commit of these memories: the body lists them unless the subject names its one
    (`<Verb> <type>: <title>`)."""
    named = len(entries) == 1 and subject_line.endswith(f": {escape(entries[0].title)}")
    return message(
        subject_line,
        [e.memory_id for e in entries],
        client,
        listed=() if named or not entries else entries,
        reason=reason,
    )


def one(name: str, of: Entry, client: str, **fields: object) -> str:
    """The message of a commit about one memory, by template name."""
    return message(subject(name, of, **fields), [of.memory_id], client)


def created(entries: Sequence[Entry], client: str) -> str:
    """A create of one memory, or of several in one call."""
    if len(entries) == 1:
        return one("create", entries[0], client)
    return about(subject("create_batch", memories=memories(len(entries))), entries, client)


def updated(of: Entry, was: Entry | None, client: str) -> str:
    """An update of one memory (was: as its file stood before); a new title names the
    old one, or the log would not say which memory a rewrite replaced."""
    if was is not None and was.title != of.title:
        return one("retitle", of, client, old=was.title)
    return one("update", of, client)


def client_of(message: str) -> str | None:
    """The client a message's `Client:` trailer names (the last paragraph's), or None."""
    for line in message.rstrip("\n").rpartition("\n\n")[2].splitlines():
        if line.startswith("Client: "):
            return line.removeprefix("Client: ")
    return None


def moved(of: Entry, old: str, new: str, client: str) -> str:
    """A move of one memory's file from old to new."""
    line = subject("move", of, old=old, new=new)
    return message(line, [of.memory_id], client, moved_from=old)


def hand_edited(entries: Sequence[Entry], moved_from: Sequence[str], client: str) -> str:
    """Several memories a person changed in one quiet period: one commit listing each (a
    `Moved-From:` trailer for each that moved)."""
    line = subject("hand_edit_batch", memories=memories(len(entries)))
    ids = [e.memory_id for e in entries]
    return message(line, ids, client, listed=entries, moved_from=moved_from)


def reference() -> str:
    """The templates as a Markdown table (docs/history.md holds it)."""
    rows = ["| subject | when |", "|---|---|"]
    rows += [f"| `{template}` | {when} |" for template, when in TEMPLATES.values()]
    return "\n".join(rows) + "\n"


REFERENCE_START = "<!-- commit subjects: generated from vault_tool/core/changelog.py -->\n"
REFERENCE_END = "<!-- end of commit subjects -->\n"


def with_reference(text: str) -> str:
    """text (docs/history.md) with its marked block of templates made current."""
    head, start, rest = text.partition(REFERENCE_START)
    _, end, tail = rest.partition(REFERENCE_END)
    if not start or not end:
        raise ValueError("no commit-subjects block: add the two marker lines")
    return head + start + "\n" + reference() + "\n" + end + tail


if __name__ == "__main__":  # python -m vault_tool.core.changelog docs/history.md
    from pathlib import Path

    doc = Path(sys.argv[1])
    doc.write_text(with_reference(doc.read_text(encoding="utf-8")), encoding="utf-8")


def synced(
    commits: int,
    source: str,
    kept_edited: Sequence[str],
    flagged: Sequence[str],
    kept_both: Sequence[tuple[str, str]] = (),
) -> str:
    """A sync's merge of the remote branch's commits; the body names what a person should
    look at: memories kept edited over a deletion, bodies left with conflict markers, two
    new memories that shared a path."""
    what = f"{commits} commit" + ("" if commits == 1 else "s")
    lines = [f"- kept {escape(p)}: edited on one side, deleted on the other" for p in kept_edited]
    lines += [f"- {escape(p)}: both sides changed the same lines; its body holds conflict "
              "markers (vault-tool doctor)" for p in flagged]  # fmt: skip
    lines += [f"- kept both memories added at {escape(p)}: the other is now {escape(q)}"
              for p, q in kept_both]  # fmt: skip
    parts = [subject("sync", what=what, source=source), *(["\n".join(lines)] if lines else [])]
    return "\n\n".join([*parts, "Client: sync"]) + "\n"
