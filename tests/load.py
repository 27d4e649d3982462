"""One load factor for the whole suite: every deadline a test waits on is scaled by it, so a busy
day makes the suite slower, never red.

The factor is measured when the suite starts (in the controller, before the xdist workers are
spawned; they inherit it through the environment): how much longer a fixed piece of pure CPU
work takes on the wall clock than on this process's CPU clock, and the machine's load average
per core. `BF4PS_TEST_SLOWDOWN=3` sets that floor instead (a known-slow runner). A load that
rises during the run raises the factor too: `slowdown()` is never below the load average per
core now, and a `Deadline` grows with the highest factor seen while it runs. Only deadlines
scale: a wait on a condition still ends the moment the condition holds, so a quiet machine pays
nothing for the head-room.
"""

from __future__ import annotations

import os
import time

ENV = "BF4PS_TEST_SLOWDOWN"
CEILING = 10.0  # past this the machine is not slow but stuck: let the timeout say so


def measure() -> float:
    """The load factor now: ≥ 1, at most CEILING."""
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    ratios = []
    for _ in range(5):  # the best of five: one descheduling is not the machine's state
        wall, cpu = time.perf_counter(), time.process_time()
        n = 0
        while time.process_time() - cpu < 0.02:
            n += 1
        ratios.append((time.perf_counter() - wall) / max(1e-6, time.process_time() - cpu))
    return round(min(CEILING, max(1.0, per_core, sorted(ratios)[2])), 2)


def publish() -> float:
    """Measure once (unless the environment already says) and put it where workers see it."""
    given = os.environ.get(ENV)
    factor = float(given) if given else measure()
    os.environ[ENV] = str(factor)
    return factor


def now() -> float:
    """The machine's load average per core now, as a factor (1 to CEILING)."""
    return min(CEILING, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))


def slowdown() -> float:
    """The suite's load factor: the one measured at the start (1 when none was published: a
    helper used outside pytest), or the load per core now when the machine got busier."""
    return max(1.0, float(os.environ.get(ENV) or 1), now())


def scaled(seconds: float) -> float:
    """A deadline of `seconds` on a quiet machine, as long as it must be today."""
    return seconds * slowdown()


class Deadline:
    """A wait of `seconds` on a quiet machine, from now: it lasts `seconds` times the highest
    load factor seen since it began, so a load that rises during the wait lengthens it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.factor = slowdown()

    def allowed(self) -> float:
        """The wait's length as it stands now (seconds)."""
        self.factor = max(self.factor, slowdown())
        return self.seconds * self.factor

    def left(self) -> float:
        """Seconds until it gives up (≤ 0 once it has)."""
        return self.start + self.allowed() - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0


def deadline(seconds: float) -> Deadline:
    """A wait of `seconds` (scaled) that starts now."""
    return Deadline(seconds)
