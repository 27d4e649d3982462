"""Supervision: the work loop runs with its side tasks (the heartbeat, and any other), and a side
task that ends first — an error it did not expect, or returning while the collector is not
stopping — ends the work loop: the collector stops claiming, its job is let go (a claimed job
not yet sent is released; a running one is left to its lease, fenced), and the process exits
non-zero so systemd restarts it (docs/architecture.md "Supervision")."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

EXIT_FAILED = 70  # EX_SOFTWARE: a side task died; systemd's Restart=on-failure restarts it


@dataclass(frozen=True)
class Failure:
    task: str
    error: BaseException | None  # None: it returned while it should have kept running

    def __str__(self) -> str:
        if self.error is None:
            return f"{self.task} ended unexpectedly"
        return f"{self.task} died: {type(self.error).__name__}: {self.error}"


async def supervise(main: Coroutine[Any, Any, None],
                    sides: dict[str, Coroutine[Any, Any, None]],
                    stop: asyncio.Event) -> Failure | None:
    """Run `main` and the side tasks until `main` ends (None; the side tasks are then stopped
    through `stop` and awaited) or a side task ends first (its Failure; `main` is cancelled,
    the remaining side tasks too)."""
    main_task = asyncio.create_task(main, name="work loop")
    side_tasks = {asyncio.create_task(c, name=n): n for n, c in sides.items()}
    pending: set[asyncio.Task[None]] = {main_task, *side_tasks}
    try:
        while True:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if main_task in done:
                main_task.result()  # the loop's own error propagates
                stop.set()
                await asyncio.gather(*pending, return_exceptions=True)
                return None
            for ended in done:
                error = ended.exception()
                if error is None and stop.is_set():
                    continue  # stopping: a side task may end before the request in flight
                failure = Failure(side_tasks[ended], error)
                log.error("collector failing: %s; claiming stops and the process exits",
                          failure)
                return failure
    finally:
        for task in (main_task, *side_tasks):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
