"""Option types that answer a bad value in one clear line: a choice answers a typo with the
closest name (`connect gemini` -> gemini-cli), a range refuses what is not a finite number."""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import click

# difflib's similarity a suggestion needs (0..1); below it, only the list of names is given.
CLOSE_ENOUGH = 0.6


def closest(value: str, names: Sequence[str]) -> str | None:
    """The one name value most likely meant: one it starts (or that starts it), else the
    most similar above CLOSE_ENOUGH; None when nothing is close or two are equally so."""
    typed = value.strip().lower()
    if not typed:
        return None
    prefixed = [n for n in names if n.lower().startswith(typed) or typed.startswith(n.lower())]
    if len(prefixed) == 1:
        return prefixed[0]
    similar = difflib.get_close_matches(typed, [n.lower() for n in names], n=2, cutoff=CLOSE_ENOUGH)
    if not similar:
        return None
    return next(n for n in names if n.lower() == similar[0])


class NamedChoice(click.Choice):
    """click.Choice whose refusal is one short line: the names once, then the closest."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        names = [str(choice) for choice in self.choices]
        guess = closest(str(value), names)
        hint = f"; did you mean {guess!r}?" if guess else ""
        return f"{value!r} is not one of {', '.join(names)}{hint}"


def project_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A --project value checked as the option is parsed (core/projects.py's form)."""
    from vault_tool.core.projects import check_project

    return None if value is None else check_project(value, f"--{param.name}")


class FiniteRange(click.FloatRange):
    """click.FloatRange that also refuses nan, which compares false with both its ends."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number from {self.min:g} to {self.max:g}", param, ctx)
        return number
