"""Links between notes as Obsidian writes them, and how a link names a note. Pure: no I/O.

A note links with wikilinks (`[[note]]`, `[[note|label]]`, `[[note#heading]]`,
`[[folder/note]]`, embeds `![[note]]`) and relative Markdown links
(`[text](../other/note.md)`, spaces as `%20` or inside `<...>`). Links inside code spans
and fenced code are text, not links; links with a scheme (`https:`, `mailto:`) and links
to a heading of the same note are not links to another note.

A link names a note, and which note it names depends on every other note in the vault,
so a link is kept as written and resolved when it is read (`resolve`, with a lookup the
index or a dict answers): a link to a note written later resolves without the linking
note being read again. The resolution order, and how a tie is broken:
1. a relative link (a Markdown link, or a wikilink written with `./` or `../`): the note
   at that path from the linking note's folder (from the vault's root with a leading `/`);
2. a path (`folder/note`): the note whose path is, or ends with, that path;
   a name (`note`): the note with that file name;
3. else the note with that title; 4. else the note with that alias (front matter
   `aliases` or `alias`: a list, or one string of names split by commas).
Names are compared without regard to case. When several notes answer one step, the one
in the linking note's folder wins, then the one with the fewest folders, then the first
in alphabetical order of path (the rule of ops/importers/links.py, which resolves the
links of notes being imported). A link that answers no step and looks like a file
(`diagram.png`, `report.pdf`) is a link to an attachment, not to a note; any other is
unresolved.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

# More links than this in one note are not followed (a generated index page, say).
MAX_LINKS = 1000
# The prefixes of the keys a note can be found by (see names_of).
FILE, PATH, TITLE, ALIAS = "file:", "path:", "title:", "alias:"
# The prefixes of the keys of a note's links (see link_keys).
WIKI, MARKDOWN, FALLBACK = "w:", "m:", "f:"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_PARAGRAPH_BREAK = re.compile(r"(\n[ \t]*\n)")
# Both begin with a plain `[` (an embed's `!` is looked for before it): a pattern that
# begins with an optional part is tried at every character, three times slower.
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_MARKDOWN_LINK = re.compile(
    r"\[([^\[\]\n]*)\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")
# A file's extension: letters and digits with at least one letter (`v1.2` is a name).
_FILE_SUFFIX = re.compile(r"\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,8}$")


@dataclass(frozen=True)
class Link:
    """One link as written in a note, and the note it names (heading and `.md` removed)."""

    text: str
    target: str
    # A Markdown link: its target is a path from the linking note's folder.
    markdown: bool = False

    def stored(self) -> list[Any]:
        """The link as the index keeps it."""
        return [self.text, self.target, self.markdown]

    @classmethod
    def from_stored(cls, row: list[Any]) -> Link:
        """The link the index kept."""
        return cls(text=row[0], target=row[1], markdown=bool(row[2]))

    @property
    def looks_like_file(self) -> bool:
        """Whether the target has a file extension (an attachment, unless a note is named so)."""
        return bool(_FILE_SUFFIX.search(self.target.rsplit("/", 1)[-1]))


def extract(body: str) -> tuple[Link, ...]:
    """The links of a note's body to other notes and files, in order, each once."""
    if "[" not in body:
        return ()
    text = prose(body)
    found: list[tuple[int, Link]] = []
    for match in _WIKILINK.finditer(text):
        inner = match.group(1).replace("\\|", "|")
        target = _without_md(inner.split("|", 1)[0].split("#", 1)[0].strip())
        if target:
            found.append(_found(text, match, target))
    # (A wikilink is never read as a Markdown link too: its text cannot hold brackets.)
    for match in _MARKDOWN_LINK.finditer(text):
        target = _markdown_target(match.group(2))
        if target:
            found.append(_found(text, match, target, markdown=True))
    once: dict[str, Link] = {}
    for _, link in sorted(found, key=lambda item: item[0]):
        once.setdefault(link.text, link)
    return tuple(once.values())[:MAX_LINKS]


def _found(
    text: str, match: re.Match[str], target: str, markdown: bool = False
) -> tuple[int, Link]:
    """(where, link) of a match, an embed's `!` kept in the text as written."""
    start = match.start() - (match.start() > 0 and text[match.start() - 1] == "!")
    return start, Link(text[start : match.end()], target, markdown)


def key(name: str) -> str:
    """A name as links compare it: case folded, Unicode composed, single spaces."""
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def names_of(path: str, title: str, aliases: list[str]) -> list[str]:
    """The keys a note can be found by: its file name, its path and each shorter path it
    ends with, its title and its aliases (each prefixed by which it is)."""
    parts = path_key(path).split("/")
    keys = [FILE + parts[-1]]
    keys += [PATH + "/".join(parts[n:]) for n in range(len(parts))]
    keys.append(TITLE + key(title))
    keys += [ALIAS + key(a) for a in aliases]
    return list(dict.fromkeys(k for k in keys if not k.endswith(":")))


def aliases_of(extra: dict[str, Any]) -> list[str]:
    """A note's aliases, from the front matter keys this tool does not own (`aliases`, or
    Obsidian's older `alias`)."""
    return alias_list(extra.get("aliases", extra.get("alias")))


def alias_list(value: Any) -> list[str]:
    """Front matter `aliases` (a list, or one string of names split by commas) as names."""
    if isinstance(value, str):
        return [a.strip() for a in value.split(",") if a.strip()]
    if isinstance(value, list):
        names = [v for v in value if isinstance(v, str | int) and not isinstance(v, bool)]
        return [str(v).strip() for v in names if str(v).strip()]
    return []


def link_keys(link: Link, source: str) -> list[str]:
    """The keys that find the notes with this link (the index's `link_keys`), by what it
    is resolved by: a link by name (`w:`), a relative link's path from the vault's root
    (`m:`) and the name it falls back to when no note is there (`f:`)."""
    keys = []
    joined = _joined(link, source)
    if joined:
        keys.append(MARKDOWN + key(joined))
    name = key(_climbed_out(link.target))
    if name:
        keys.append((FALLBACK if is_relative(link) else WIKI) + name)
    return keys


def path_key(path: str) -> str:
    """A note's path as links compare it (without `.md`)."""
    return key(_without_md(path))


def resolve(link: Link, source: str, lookup: Callable[[str], Iterable[str]]) -> str | None:
    """The path of the note a link in the note at source names, or None (see the module's
    docstring for the order). lookup(prefixed key) gives the paths of the notes with it."""
    at_path = exact_path(link, source, lookup)
    if at_path:
        return nearest(at_path, source)
    found = by_name(key(_climbed_out(link.target)), lookup)
    return nearest(found, source) if found else None


def exact_path(link: Link, source: str, lookup: Callable[[str], Iterable[str]]) -> list[str]:
    """The notes at a relative link's path from the linking note's folder (a Markdown link,
    or a wikilink written with `./` or `../`), or from the vault's root (a leading `/`)."""
    joined = _joined(link, source)
    if not joined:
        return []
    wanted = key(joined)
    return [p for p in lookup(PATH + wanted) if path_key(p) == wanted]


def by_name(name: str, lookup: Callable[[str], Iterable[str]]) -> list[str]:
    """The notes the first step that knows this name finds: path (or file name), title, alias."""
    if not name:
        return []
    for prefix in (PATH if "/" in name else FILE, TITLE, ALIAS):
        found = list(lookup(prefix + name))
        if found:
            return found
    return []


def nearest(paths: Iterable[str], source: str) -> str:
    """The tie-break among notes one name finds: the one in the linking note's folder,
    then the one with the fewest folders, then the first in alphabetical order."""
    folder = posixpath.dirname(source)
    return min(paths, key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), p))


def _joined(link: Link, source: str) -> str | None:
    """A relative link's target from the vault's root (None for a link by name, or a path
    that leaves the vault)."""
    if not is_relative(link):
        return None
    if link.target.startswith("/"):
        joined = posixpath.normpath(link.target.lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), link.target))
    return None if joined == ".." or joined.startswith("../") else joined


def is_relative(link: Link) -> bool:
    """Whether a link is a path from the linking note's folder: which note it names then
    depends on where it is written."""
    return link.markdown or link.target.startswith(("./", "../"))


def _climbed_out(target: str) -> str:
    """A target without its leading `/`, `./` and `../` (to find it by name or path end)."""
    parts = [p for p in target.split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


def _markdown_target(raw: str) -> str | None:
    """A Markdown link's note path (decoded, without heading and `.md`), or None for a web
    address, a heading of the same note or a folder."""
    target = raw[1:-1].strip() if raw.startswith("<") else raw
    if not target or _SCHEME.match(target):
        return None
    target = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    if not target or target.endswith("/"):
        return None
    return _without_md(target)


def _without_md(name: str) -> str:
    return name[:-3] if name.lower().endswith(".md") else name


def prose(body: str) -> str:
    """The body with fenced code and code spans blanked, each character a space (line
    breaks and positions kept): what is left is the text links and tags are read from."""
    lines: list[str] = []
    fence = ""
    for line in body.split("\n"):
        marker = FENCE.match(line)
        if fence:
            closing = marker and marker.group(1)[0] == fence[0]
            if closing and len(marker.group(1)) >= len(fence) and not line[marker.end() :].strip():
                fence = ""
            lines.append("")
        elif marker and not (marker.group(1)[0] == "`" and "`" in line[marker.end() :]):
            fence = marker.group(1)
            lines.append("")
        else:
            lines.append(line)
    text = "\n".join(lines)
    if "`" not in text:
        return text
    # A code span ends at a blank line: it lives within one paragraph.
    return "".join(_without_code_spans(chunk) for chunk in _PARAGRAPH_BREAK.split(text))


def _without_code_spans(text: str) -> str:
    """text with its code spans blanked: a run of n backticks opens one, and the next run
    of exactly n closes it; a run that nothing closes is plain text (CommonMark's rule).

    Each run looks up the next run of its length instead of scanning ahead (a regex
    does), so a file of runs of ever longer lengths costs linear time, not quadratic.
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    if len(runs) < 2:
        return text
    of_length: dict[int, list[int]] = {}
    for n, (start, end) in enumerate(runs):
        of_length.setdefault(end - start, []).append(n)
    pieces: list[str] = []
    done = n = 0
    while n < len(runs):
        start, end = runs[n]
        same = of_length[end - start]
        later = bisect_right(same, n)
        if later == len(same):
            n += 1
            continue
        closing = same[later]
        stop = runs[closing][1]
        pieces += [text[done:start], _blank(text[start:stop])]
        done, n = stop, closing + 1
    pieces.append(text[done:])
    return "".join(pieces)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)
