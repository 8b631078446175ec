"""Fault injection for the write path: make one OS call of a write fail, write short, or end
the process, or run something (a person's save) just before it.

The write path makes every write, fsync, link, rename and removal of a memory file or a
journal through the names vault_tool/storage/durable.py exposes for it (os_write, ...).
Faults swaps them for the current process, counting calls, and acts on the ones asked for:

    with Faults(Fault("write", 2, "enospc")):     # the 2nd write fails: the disk is full
        vault.remember(...)
    with Faults() as steps:                        # no fault: count and name the steps
        vault.remember(...)
    steps.log -> [("open", "x.json"), ("write", "x.json"), ...]

In a child process, `VAULT_TOOL_FAULTS="any:5:crash" python -m tests.faults MODULE ARGS...`
installs the faults named in the variable (call:nth:action, comma-separated) and runs
MODULE as `python -m MODULE ARGS...` would: the crash harness uses it to end a writer at a
chosen step instead of relying on SIGKILL timing alone.

Actions: short (write half the bytes and say so; the caller must write the rest),
short-enospc / short-efbig (write part, then the next write fails as a full disk or a
file-size limit does), enospc, eio, efbig (fail, touching nothing), crash (os._exit before
the call), crash-after (after it), hook (call fault.hook() first, then the call).
"""

from __future__ import annotations

import errno
import os
import runpy
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vault_tool.storage import durable

ENV = "VAULT_TOOL_FAULTS"
CRASH_EXIT = 86  # the exit status of a process a fault ended
FIRED = "FAULT"  # how a child announces a fault that fired (see from_environment)
CALLS = ("open", "write", "fsync", "link", "replace", "unlink")
ERRORS = {"enospc": errno.ENOSPC, "eio": errno.EIO, "efbig": errno.EFBIG}
ACTIONS = (
    *ERRORS,
    "short",
    "short-enospc",
    "short-efbig",
    "crash",
    "crash-after",
    "hook",
)


@dataclass
class Fault:
    """Act on the nth call (1-based, counted from install) of one kind, or of any kind."""

    call: str
    nth: int
    action: str
    hook: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        assert self.call in (*CALLS, "any"), self.call
        assert self.action in ACTIONS, self.action

    @classmethod
    def parse(cls, text: str) -> Fault:
        call, nth, action = text.split(":")
        return cls(call, int(nth), action)


class Faults:
    """The seam swapped for this process while entered; log names every call made."""

    def __init__(self, *faults: Fault, on_fire: Callable[[Fault], Any] | None = None) -> None:
        self.faults = list(faults)
        self.on_fire = on_fire
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str]] = []
        self.fired: list[Fault] = []
        self._fail_next_write: int | None = None
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> Faults:
        for call in CALLS:
            name = f"os_{call}"
            self._saved[name] = getattr(durable, name)
            setattr(durable, name, self._wrap(call, self._saved[name]))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, real in self._saved.items():
            setattr(durable, name, real)
        self._saved.clear()

    @property
    def steps(self) -> int:
        return self.counts["any"]

    def _wrap(self, call: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def faulty(*args: Any, **kwargs: Any) -> Any:
            self.counts[call] += 1
            self.counts["any"] += 1
            self.log.append((call, _name(args[0])))
            if call == "write" and self._fail_next_write is not None:
                code, self._fail_next_write = self._fail_next_write, None
                raise OSError(code, os.strerror(code))
            for fault in self.faults:
                if self.counts[fault.call] == fault.nth and fault.call in (call, "any"):
                    self.fired.append(fault)
                    if self.on_fire is not None:
                        self.on_fire(fault)
                    return self._act(fault, call, real, args, kwargs)
            return real(*args, **kwargs)

        return faulty

    def _act(
        self, fault: Fault, call: str, real: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        action = fault.action
        if action in ERRORS:
            raise OSError(ERRORS[action], os.strerror(ERRORS[action]), _name(args[0]))
        if action == "crash":
            os._exit(CRASH_EXIT)
        if action == "hook":
            assert fault.hook is not None
            fault.hook()
            return real(*args, **kwargs)
        if action.startswith("short"):
            assert call == "write", "a short write needs a write call"
            fd, data = args
            written = real(fd, bytes(data)[: max(1, len(data) // 2)])
            if action != "short":
                self._fail_next_write = ERRORS[action.split("-")[1]]
            return written
        real(*args, **kwargs)  # crash-after
        os._exit(CRASH_EXIT)


def _name(target: Any) -> str:
    return os.path.basename(str(target)) if not isinstance(target, int) else f"fd {target}"


def from_environment() -> Faults:
    """The faults VAULT_TOOL_FAULTS names (empty: none); each one that fires says so on
    stderr (`FAULT call:nth:action`) before it acts."""
    text = os.environ.get(ENV, "")
    return Faults(*(Fault.parse(part) for part in text.split(",") if part), on_fire=_announce)


def _announce(fault: Fault) -> None:
    print(f"{FIRED} {fault.call}:{fault.nth}:{fault.action}", file=sys.stderr, flush=True)


def main() -> None:
    """Run a module (`python -m tests.faults MODULE ARGS...`) with the environment's faults."""
    module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    with from_environment():
        runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
