"""Which note each link of an imported note names: the vault's own rules (core/links.py),
asked of the imported notes first, then of the vault's.

So the import report, `vault-tool show` and `doctor` agree on every link: by a relative
path, a path or the end of one, a file name, a title, then an alias; among several notes of
one name, the one in the linking note's folder, then the one with the fewest folders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from vault_tool.core import links as rules
from vault_tool.core.links import Link


class Names:
    """A link lookup (prefixed name -> paths) over the imported notes, then the vault's."""

    def __init__(
        self, imported: dict[str, tuple[str, list[str]]], vault: Callable[[str], list[str]]
    ) -> None:
        self._imported: dict[str, list[str]] = {}
        for path, (title, aliases) in imported.items():  # path -> (title, aliases)
            for name in rules.names_of(path, title, aliases):
                self._imported.setdefault(name, []).append(path)
        self._vault = vault

    def __call__(self, name: str) -> Iterable[str]:
        return self._imported.get(name) or self._vault(name)


def report_links(
    found: Iterable[Link], source: str, names: Names, id_of: Callable[[str], str]
) -> Iterator[dict[str, Any]]:
    """Each link as the import report lists it: as written, its target, the id it names
    (or "attachment" for a file that is no note, or "unresolved")."""
    for link in found:
        path = rules.resolve(link, source, names)
        if path is not None:
            resolved = id_of(path)
        else:
            resolved = "attachment" if link.looks_like_file else "unresolved"
        yield {"link": link.text, "target": link.target, "resolves_to": resolved}
