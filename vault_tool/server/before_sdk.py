"""Before the SDK is ready: the lines read meanwhile, and the requests answered without it.

The reader thread puts every line from stdin into the Inbox. Until the SDK has imported,
EarlyServer takes them from there and answers what early.py can (ping, tools/list); at the
first request it cannot (a tool call among them), or once the SDK is ready, it stops,
and the lines it kept (notifications, that request) and those still held reach the SDK
first, in order, then the reader thread forwards each new line to the SDK directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from vault_tool.server import early
from vault_tool.server.runtime import Runtime


class Inbox:
    """The lines the reader thread has read: held for whoever reads them here until the SDK
    takes over, then forwarded to it as they come (in order: held ones first)."""

    def __init__(self) -> None:
        self._held: list[str | None] = []  # None: stdin was closed
        self._forward: Callable[[str | None], None] | None = None
        self._changed = threading.Condition()
        self._woken = False

    def put(self, line: str | None) -> None:
        """One line from the wire (None at EOF); the reader thread's only call."""
        with self._changed:
            forward = self._forward
            if forward is None:
                self._held.append(line)
                self._changed.notify_all()
                return
        forward(line)

    def get(self) -> str | bool | None:
        """The next held line, None at EOF, or False once woken with nothing held."""
        with self._changed:
            self._changed.wait_for(lambda: self._held or self._woken)
            if self._held:
                return self._held.pop(0)
            return False

    def wake(self) -> None:
        """Make a waiting get() return (the SDK is ready)."""
        with self._changed:
            self._woken = True
            self._changed.notify_all()

    def hand_over(self, forward: Callable[[str | None], None]) -> list[str | None]:
        """From now on forward each line; the lines held until now are returned."""
        with self._changed:
            held, self._held = self._held, []
            self._forward = forward
            return held


class EarlyServer:
    """The requests answered before the SDK is ready (early.py says which)."""

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        send_line: Callable[[str], None],
    ) -> None:
        self.runtime = runtime
        self.inbox = inbox
        self.send_line = send_line

    def serve(self, ready: Any) -> list[str | None] | None:
        """Answer what it can until the SDK is ready; the lines left to the SDK, in order.

        None when stdin closed meanwhile: every request read was answered, nothing is left.
        """
        kept: list[str | None] = []  # notifications, and the first line the SDK must answer
        while not ready.is_set():
            line = self.inbox.get()
            if line is False:
                continue  # woken: the SDK is ready
            if line is None:
                return None
            request = early.read(line)
            if request is None:
                kept.append(line)
                break  # the SDK answers this one, and everything after it
            if request.kind == early.NOTIFICATION:
                kept.append(line)
                continue
            result = {} if request.kind == early.PING else self._tools()
            self.send_line(early.answer(request.request_id, result))
        return kept

    def _tools(self) -> dict[str, Any]:
        return early.tools_list_result(profile=self.runtime.profile)
