"""Characters that must never reach a reader raw: in names, and in what the tool prints.

A file name (or a title, an id, an error quoting either) printed in the tool's own voice
could otherwise start a new line that reads like the tool speaking, reorder what follows
(bidirectional overrides), hide text (zero-width and tag characters), or drive a terminal
(escape sequences). Such characters are refused in file names (`ids.path_problem`) and
shown escaped, as Python writes them (`\\n`, `\\u202e`), wherever the tool prints outside a
data frame. Zero-width joiners (U+200C, U+200D) are left alone: scripts and emoji use them.
"""

from __future__ import annotations

import re
import shlex

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_INVISIBLE = "\u00ad\u180e\u200b\u2060-\u2064\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}{_INVISIBLE}]")
# What a JSON string may hold raw that a terminal or a reader should not get raw (json.dumps
# already escapes U+0000-U+001F).
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f\u2028\u2029{_BIDI}{_INVISIBLE}]")


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def escape(text: object) -> str:
    """text with every unsafe character written as its escape (a newline as \\n)."""
    return UNSAFE.sub(_escaped, str(text))


def escape_except_newlines(text: str) -> str:
    """The same, keeping line breaks: for text the tool lays out in lines itself."""
    return "\n".join(escape(line) for line in text.split("\n"))


def escape_json(dumped: str) -> str:
    """JSON text with unsafe characters inside its strings as \\u escapes (the same data)."""

    def as_json_escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        if code > 0xFFFF:  # a surrogate pair, as JSON writes characters beyond the BMP
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return _UNSAFE_IN_JSON.sub(as_json_escape, dumped)


def unsafe_characters(text: str) -> list[str]:
    """The unsafe characters in text, escaped, each once, in order of appearance."""
    return list(dict.fromkeys(_escaped(m) for m in UNSAFE.finditer(text)))


def command(verb: str, *values: str) -> str:
    """`vault-tool VERB VALUE...` as a person can paste it into a shell: each value quoted,
    and `--` before the values when one starts with `-` (a file's path id such as
    `-how-we-deploy` is a value, not the option `-h`)."""
    quoted = [shlex.quote(value) for value in values]
    if any(value.startswith("-") for value in values):
        quoted.insert(0, "--")
    return " ".join(["vault-tool", verb, *quoted])
