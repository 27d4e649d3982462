"""One load factor for the whole suite: every deadline a test waits on is scaled by it, so a busy
day makes the suite slower, never red.

The factor is measured once, when the suite starts (in the controller, before the xdist workers
are spawned; they inherit it through the environment): how much longer a fixed piece of pure
CPU work takes on the wall clock than on this process's CPU clock (the cores are shared with
something else), and the machine's load average per core. `BF4PS_TEST_SLOWDOWN=3` sets it
instead (a known-slow runner). Only deadlines scale: a wait on a condition still ends the moment
the condition holds, so a quiet machine pays nothing for the head-room.
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


def slowdown() -> float:
    """The suite's load factor (1 when none was published: a helper used outside pytest)."""
    return max(1.0, float(os.environ.get(ENV) or 1))


def scaled(seconds: float) -> float:
    """A deadline of `seconds` on a quiet machine, as long as it must be today."""
    return seconds * slowdown()


def deadline(seconds: float) -> float:
    """time.monotonic() at which a wait of `seconds` (scaled) gives up."""
    return time.monotonic() + scaled(seconds)
