"""The front matter YAML, read and written safely.

Reading refuses what makes YAML dangerous or ambiguous in a file people edit: anchors and
aliases (a "billion laughs" document), deep nesting, huge documents, and implicit
timestamps (dates stay the strings the file holds, so a file renders back byte for byte).
Writing is block style, with list items indented under their key, as people write YAML.

Reading uses libyaml's C parser where PyYAML was built with it (most wheels are), else
PyYAML's own: the same checks run on the node graph either builds, before any value is
made, so the rules hold alike on both (only a syntax error's wording is each parser's own).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from vault_tool.errors import UnparseableFile

_MAX_YAML_NODES = 5_000
_MAX_YAML_DEPTH = 16
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# The fix an unparseable front matter's error carries (doctor shows it as it is).
_YAML_HINT = (
    "fix the YAML between the --- lines at that line: a missing space after ':', a tab, an "
    "unclosed quote or bracket"
)


# The parsers at hand, the first the one used: libyaml's (C) reads front matter ~8x faster.
PARSERS = ("libyaml", "python") if hasattr(yaml, "CSafeLoader") else ("python",)


def load_yaml(raw: str, path: str, *, parser: str = PARSERS[0]) -> dict[str, Any]:
    """Front matter YAML -> dict, refusing aliases, deep nesting and non-mapping documents."""
    try:
        meta = yaml.load(raw, Loader=_loader(parser))
    except yaml.MarkedYAMLError as problem:
        mark = problem.problem_mark or problem.context_mark
        # The splitter leaves the newline after the opening --- at the start of raw, so
        # raw's line n (0-based) is the file's line n + 1.
        line = mark.line + 1 if mark else None
        reason = f"front matter is not valid YAML: {problem.problem or problem.context}"
        raise UnparseableFile(path, line, reason, _YAML_HINT) from None
    except yaml.YAMLError as problem:
        raise UnparseableFile(
            path, 2, f"front matter is not valid YAML: {problem}", _YAML_HINT
        ) from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise UnparseableFile(
            path, 2, "front matter is not a mapping of keys to values", "write key: value lines"
        )
    return meta


@cache
def _loader(parser: str) -> type:
    base = yaml.CSafeLoader if parser == "libyaml" else yaml.SafeLoader

    class FrontMatterLoader(base):  # type: ignore[misc, valid-type]
        # Dates stay strings: the file's text is the value, and validation checks its shape.
        yaml_implicit_resolvers = _without_timestamps(base.yaml_implicit_resolvers)

        def construct_document(self, node: Any) -> Any:
            _check_node_graph(node)
            return super().construct_document(node)

    return FrontMatterLoader


def _check_node_graph(root: Any) -> None:
    """Refuse anchors reused as aliases (billion laughs), deep nesting and huge documents."""
    seen: set[int] = set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise yaml.YAMLError("anchors and aliases are not allowed in front matter")
        seen.add(id(node))
        if depth > _MAX_YAML_DEPTH or len(seen) > _MAX_YAML_NODES:
            raise yaml.YAMLError("front matter is nested too deeply or is too large")
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)


def _without_timestamps(resolvers: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    return {k: [(t, r) for t, r in v if t != _TIMESTAMP_TAG] for k, v in resolvers.items()}


class _Dumper(yaml.SafeDumper):
    yaml_implicit_resolvers = _without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        # Indent list items under their key ("entities:\n  - n: Ana"), as people write YAML.
        return super().increase_indent(flow, False)


def dump_yaml(front: dict[str, Any]) -> str:
    """Front matter as block YAML, keys in the order given, no line wrapping."""
    return yaml.dump(
        front,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
