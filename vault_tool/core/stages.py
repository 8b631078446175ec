"""Where a tool call's time goes: named stages, timed on the thread that runs the call.

The server opens `timing()` around each call and writes what it collected to the audit
log (`stages_ms`), so an operator can see why one call was slow and the benchmark can
break a latency down without a profiler. Code on the way marks its part with
`stage(name)`; outside a timed call that costs one thread-local lookup. Stages are meant
not to nest: a name's time includes any stage marked inside it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_current = threading.local()


@contextmanager
def timing() -> Iterator[dict[str, float]]:
    """Collect the stages marked on this thread until the block ends: {name: seconds}."""
    collected: dict[str, float] = {}
    outer = getattr(_current, "collected", None)
    _current.collected = collected
    try:
        yield collected
    finally:
        _current.collected = outer


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Add the block's duration to `name` in the timing open on this thread, if any."""
    collected = getattr(_current, "collected", None)
    if collected is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        collected[name] = collected.get(name, 0.0) + time.perf_counter() - started


def timed(name: str) -> Callable[[F], F]:
    """A function whose every call is the stage `name` (see stage)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            with stage(name):
                return function(*args, **kwargs)

        return timed_call  # type: ignore[return-value]

    return decorate


def as_milliseconds(collected: dict[str, float]) -> dict[str, float]:
    """Stages rounded to a tenth of a millisecond, for a log line."""
    return {name: round(seconds * 1000, 1) for name, seconds in collected.items()}
