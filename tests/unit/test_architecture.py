"""The layout of docs/design.md, checked from the code's own imports (lazy ones included).

Each rule is a function over a parsed package, so the tests below also show every rule
failing on a small package built to break it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vault_tool"
REPO = PACKAGE.parent

# Which rooms each room may import (a room is the first part of a module name below the
# package: "core" for vault_tool.core.memory, "watcher" for vault_tool.watcher).
ALLOWED = {
    "errors": set(),
    "core": {"errors"},
    "storage": {"errors", "core"},
    "search": {"errors", "core"},
    "engine": {"errors", "core", "storage", "search"},
    "ops": {"errors", "core", "engine"},
    "checks": {"errors", "core", "storage", "search"},
    "watcher": {"errors", "core", "engine", "storage"},
    "server": {"errors", "core", "engine", "watcher", "package"},
    "cli": {"errors", "core", "storage", "engine", "ops", "checks", "watcher", "server", "package"},
    "package": {"engine", "errors"},
    "__main__": {"cli"},
}
# Third-party packages only one room may import: the reasons are in docs/design.md.
CONFINED = {
    "mcp": {"server"},
    "mcp_types": {"server"},
    "whoosh": {"search", "core.text", "core.words"},  # (the analyser: core/words.py)
    "git": {"storage"},
    "watchdog": {"watcher"},
    "click": {"cli"},
}
# Vault's parts: only the engine may touch them.
VAULT_PARTS = {"_store", "_index", "_ledger", "_intake", "_writer"}
MAX_LINES = 600  # modules are cut by concept (docs/design.md); a cap, not a target
FORBIDDEN_NAMES = {"utils", "helpers", "common"}


@dataclass
class Module:
    """One parsed module: its name, its imports (of ours and third-party), its tree."""

    name: str
    path: Path
    tree: ast.Module
    ours: set[str] = field(default_factory=set)
    third_party: set[str] = field(default_factory=set)

    @property
    def room(self) -> str:
        parts = self.name.split(".")
        return "package" if len(parts) == 1 else parts[1]


def parse_package(root: Path, package: str) -> dict[str, Module]:
    """Every module under root (named package.x.y), with every import it makes anywhere."""
    modules: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join([package, *parts])
        modules[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, node)
                # `from p import m` imports the module p.m when there is one, else names of p.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                if target == package or target.startswith(package + "."):
                    module.ours.add(target)
                else:
                    module.third_party.add(target.split(".")[0])
    return modules


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if module.path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _room_of(name: str) -> str:
    parts = name.split(".")
    return "package" if len(parts) == 1 else parts[1]


def layer_violations(modules: dict[str, Module]) -> list[str]:
    """Imports that go sideways or up."""
    found = []
    for module in modules.values():
        allowed = ALLOWED.get(module.room, set()) | {module.room}
        for target in sorted(module.ours):
            if _room_of(target) not in allowed:
                found.append(f"{module.name} imports {target}")
    return found


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), lazy imports counted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in modules[name].ours:
            if target not in modules:
                continue
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(modules):
        if name not in index:
            visit(name)
    return groups


def reach_ins(modules: dict[str, Module]) -> list[str]:
    """Uses of Vault's private parts outside the engine."""
    found = []
    for module in modules.values():
        if module.room == "engine":
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and node.attr in VAULT_PARTS:
                found.append(f"{module.name}:{node.lineno} uses .{node.attr}")
    return found


def confined_imports(modules: dict[str, Module]) -> list[str]:
    """Third-party packages imported outside the room that owns them."""
    found = []
    for module in modules.values():
        for package in sorted(module.third_party):
            owners = CONFINED.get(package)
            if owners is None:
                continue
            short = module.name.split(".", 1)[-1]
            if not any(short == o or short.startswith(o + ".") for o in owners):
                found.append(f"{module.name} imports {package}")
    return found


def oversized(modules: dict[str, Module]) -> list[str]:
    """Modules longer than MAX_LINES."""
    return [
        f"{m.name}: {n} lines"
        for m in modules.values()
        if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]


def vague_modules(modules: dict[str, Module]) -> list[str]:
    """Modules named utils/helpers/common, and classes named *Manager."""
    found = [m.name for m in modules.values() if m.name.split(".")[-1] in FORBIDDEN_NAMES]
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Manager"):
                found.append(f"{module.name}.{node.name}")
    return found


def path_edits(paths: list[Path]) -> list[str]:
    """Changes to sys.path (insert, append, assignment) in any of these files."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = node.func.value
            elif isinstance(node, ast.Assign | ast.AugAssign):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "path"
                and isinstance(target.value, ast.Name)
                and target.value.id == "sys"
            ):
                found.append(f"{path.relative_to(path.parents[1])}:{node.lineno}")
    return found


# --- the rules, held on the real package ---------------------------------------------------


def private_reach(modules: dict[str, Module]) -> list[str]:
    """Private parts of other projects used: a module, or a name, starting with an
    underscore imported from a third-party package, and an attribute starting with one
    (not a dunder) that no module of ours defines, read on anything but self or cls."""
    ours = _private_names(modules)
    found = []
    for module in modules.values():
        package = module.name.split(".")[0]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == package:
                    continue
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                found += [f"{module.name}:{node.lineno} imports {n}" for n in names if _private(n)]
            elif isinstance(node, ast.Import):
                found += [
                    f"{module.name}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.split(".")[0] != package and _private(a.name)
                ]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in ours
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{module.name}:{node.lineno} reads .{node.attr}")
    return found


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _private_names(modules: dict[str, Module]) -> set[str]:
    """Every underscored name a module of ours defines: functions, classes, attributes and
    names it assigns."""
    names: set[str] = set()
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)  # (dataclass fields made by keyword: field(_x=...))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return {name for name in names if name.startswith("_")}


@pytest.fixture(scope="module")
def package() -> dict[str, Module]:
    return parse_package(PACKAGE, "vault_tool")


def test_every_import_goes_down_the_layers(package: dict[str, Module]) -> None:
    assert layer_violations(package) == []


def test_there_are_no_import_cycles(package: dict[str, Module]) -> None:
    assert cycles(package) == []


def test_only_the_engine_touches_the_parts_of_vault(package: dict[str, Module]) -> None:
    assert reach_ins(package) == []


def test_heavy_and_protocol_packages_stay_in_their_room(package: dict[str, Module]) -> None:
    assert confined_imports(package) == []


def test_no_module_is_over_600_lines(package: dict[str, Module]) -> None:
    assert oversized(package) == []


def test_no_vague_module_or_manager_class(package: dict[str, Module]) -> None:
    assert vague_modules(package) == []


def test_no_private_part_of_another_project_is_used(package: dict[str, Module]) -> None:
    assert private_reach(package) == []


def test_nothing_edits_sys_path() -> None:
    files = [
        p
        for folder in ("vault_tool", "tests", "bench")
        for p in (REPO / folder).rglob("*.py")
        if p.resolve() != Path(__file__).resolve()
    ]
    assert path_edits(files) == []


# --- each rule fails on a package built to break it ----------------------------------------


def _broken_package(tmp_path: Path) -> dict[str, Module]:
    files = {
        "__init__.py": "",
        "errors.py": "",
        "core/__init__.py": "",
        "core/memory.py": "from pkg.engine import vault\n",  # up a layer
        "engine/__init__.py": "",
        # a cycle, through a lazy import
        "engine/vault.py": "def later():\n    from pkg.engine import writer\n",
        "engine/writer.py": "from pkg.engine.vault import later\n",
        "cli/__init__.py": "",
        "cli/show.py": "import mcp\n\ndef run(vault):\n    return vault._store.head()\n",
        "ops/__init__.py": "",
        "ops/helpers.py": "import sys\nsys.path.insert(0, '.')\nclass IndexManager: ...\n",
        # private parts of other projects; one of our own is fine
        "search/reading.py": (
            "from whoosh.codec.whoosh3 import _lenfield\nimport jsonschema._utils\n"
            "from pkg.search import reading\n\n"
            "class Ours:\n    def __init__(self):\n        self._kept = 1\n\n"
            "def read(reader, other):\n    return reader._perdoc, other._kept\n"
        ),
        "search/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text + "\n" * (650 if name == "errors.py" else 0))
    return parse_package(tmp_path / "pkg", "pkg")


def test_each_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    broken = _broken_package(tmp_path)
    assert layer_violations(broken) == ["pkg.core.memory imports pkg.engine.vault"]
    assert cycles(broken) == [["pkg.engine.vault", "pkg.engine.writer"]]
    assert reach_ins(broken) == ["pkg.cli.show:4 uses ._store"]
    assert confined_imports(broken) == ["pkg.cli.show imports mcp"]
    assert oversized(broken) == ["pkg.errors: 650 lines"]
    assert vague_modules(broken) == ["pkg.ops.helpers", "pkg.ops.helpers.IndexManager"]
    assert path_edits([tmp_path / "pkg" / "ops" / "helpers.py"]) == ["ops/helpers.py:2"]
    assert private_reach(broken) == [
        "pkg.cli.show:4 reads ._store",  # (Vault's own part, not defined in pkg)
        "pkg.search.reading:1 imports whoosh.codec.whoosh3._lenfield",
        "pkg.search.reading:2 imports jsonschema._utils",
        "pkg.search.reading:10 reads ._perdoc",
    ]
