"""One ranked memory: its stored fields and the parts of its score (search --explain)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Hit:
    """One ranked memory with the parts of its score."""

    fields: dict[str, Any]
    parts: dict[str, float]
    superseded_by: list[str] = field(default_factory=list)
    # Later memories of its type about the same entities, placed above it (not lowered).
    said_again_by: list[str] = field(default_factory=list)

    @property
    def record(self) -> dict[str, Any]:
        """Content and semantic delta, decoded only for the hits that are returned."""
        if "_record" not in self.__dict__:
            self.__dict__["_record"] = json.loads(self.fields["record"])
        return self.__dict__["_record"]

    @property
    def memory_id(self) -> str:
        """The memory's id."""
        return self.fields["memory_id"]

    @property
    def score(self) -> float:
        """The whole score: (every part but factor, added up) x factor: text, entity, about,
        feedback, valid_time, meaning."""
        added = sum(value for name, value in self.parts.items() if name != "factor")
        return added * self.parts.get("factor", 1.0)
