"""When a request may leave: not before its slot, not after the slot's deadline, both checked
at the socket.

A request is begun ahead of its slot (the collector's connect lead), so that DNS, TCP and TLS
are done by then; the trace hook below runs when the request headers are about to be written,
after connecting and everything else, and holds them until the slot. Past the deadline it
abandons the request (SendTooLate) before a byte of it is written. Without the lead a new
connection to the real Battlelog (a TLS handshake: tens to hundreds of milliseconds) would
make every request on it late, and an abandoned request closes its connection, so the next
one would be late again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any


class SendTooLate(Exception):
    """The request would have left after its deadline; nothing of it was sent."""


@dataclass(frozen=True, slots=True)
class SendWindow:
    """Wall-clock bounds (epoch seconds) for writing a request: from `at` to `by`."""

    at: float
    by: float


class WindowTrace:
    """An httpcore trace hook enforcing a SendWindow; `released` is when the headers were let
    go (perf_counter), so the request's duration leaves the hold out; `released_at` the same
    instant on the wall clock (epoch seconds: when the request really left, which recon
    measures its spacing by)."""

    __slots__ = ("released", "released_at", "window")

    def __init__(self, window: SendWindow) -> None:
        self.window = window
        self.released: float | None = None
        self.released_at: float | None = None

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        if not event.endswith("send_request_headers.started") or self.released is not None:
            return  # a followed redirect (the session page) is part of the released request
        early = self.window.at - time.time()
        while early > 0:
            await asyncio.sleep(early)
            early = self.window.at - time.time()
        late = time.time() - self.window.by
        if late > 0:
            raise SendTooLate(f"request not sent: {late:.3f} s past its send deadline")
        self.released = time.perf_counter()
        self.released_at = time.time()
