"""What the chaos run is doing now, so that a run past its deadline fails with a report that says
which phase it was in and which step was stuck (a restart's stop or start, a zombie, the stop of
the fleet ...), instead of a bare timeout that says nothing.

`run_within` runs the harness's coroutine under the tier's own deadline; past it the run is
cancelled (its clean-up gets a bounded time) and the caller gets the overdue description."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
CLEANUP_SECONDS = 60.0  # what a cancelled run gets to stop its processes and its server


@dataclass
class Watch:
    """The run's phase and the steps in flight, each with when it began (monotonic)."""

    phase: str = "not started"
    phase_since: float = field(default_factory=time.monotonic)
    running: dict[int, tuple[str, float]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)  # the last steps that ended, with their times
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def enter(self, phase: str) -> None:
        self.phase, self.phase_since = phase, time.monotonic()

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        key, began = next(self._ids), time.monotonic()
        self.running[key] = (what, began)
        try:
            yield
        finally:
            del self.running[key]
            self.done = [*self.done[-9:], f"{what} ({time.monotonic() - began:.1f} s)"]

    def overdue(self, deadline: float) -> str:
        now = time.monotonic()
        lines = [f"the chaos run passed its deadline of {deadline:.0f} s in phase "
                 f"'{self.phase}' (in it for {now - self.phase_since:.0f} s)"]
        steps = sorted(self.running.values(), key=lambda s: s[1])
        if steps:
            what, began = steps[0]
            lines.append(f"stuck step (the longest in flight): {what}, for {now - began:.0f} s")
            lines += [f"also in flight: {w}, for {now - b:.0f} s" for w, b in steps[1:]]
        else:
            lines.append("no step in flight: the phase itself did not end")
        lines += [f"ended before: {d}" for d in self.done]
        return "\n".join(lines)


async def run_within(run: Coroutine[Any, Any, T], deadline: float, watch: Watch,
                     diagnose: Callable[[], str]) -> T | str:
    """`run`'s result, or, when it is not done within `deadline` seconds, the watch's overdue
    description and `diagnose()` (taken while the run is still stuck), after cancelling it."""
    task = asyncio.ensure_future(run)
    done, _ = await asyncio.wait({task}, timeout=deadline)
    if task in done:
        return task.result()
    report = watch.overdue(deadline)
    with contextlib.suppress(Exception):
        report += "\n" + diagnose()
    task.cancel()
    finished, _ = await asyncio.wait({task}, timeout=CLEANUP_SECONDS)
    if task not in finished:
        report += f"\nits clean-up did not end within {CLEANUP_SECONDS:.0f} s either"
    return report
