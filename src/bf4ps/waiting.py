"""Waiting that a stop request ends early: every loop of the processes (the scheduler's ticks,
the BF4SW intake, heartbeats, the collector's clock, the simulators, the demo) sleeps through
this one helper."""

from __future__ import annotations

import asyncio


async def sleep_unless_stopped(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds`, or less when `stop` is set meanwhile: True when the whole time passed,
    False when `stop` ended the wait (at once when it was set already)."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:  # also a wait of no time, when `stop` was set already
        return not stop.is_set()
    return False
