"""The one stop-aware sleep every loop of the processes waits through."""

from __future__ import annotations

import asyncio
import time

from bf4ps.waiting import sleep_unless_stopped


async def test_the_whole_time_passes_when_nothing_stops_it() -> None:
    started = time.monotonic()
    assert await sleep_unless_stopped(asyncio.Event(), 0.05) is True
    assert time.monotonic() - started >= 0.04


async def test_a_stop_request_ends_the_wait_early() -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    started = time.monotonic()
    assert await sleep_unless_stopped(stop, 30) is False
    assert time.monotonic() - started < 5


async def test_an_earlier_stop_request_returns_at_once() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await sleep_unless_stopped(stop, 30) is False
    assert await sleep_unless_stopped(stop, 0) is False


async def test_no_time_to_sleep_is_no_stop() -> None:
    assert await sleep_unless_stopped(asyncio.Event(), 0) is True
    assert await sleep_unless_stopped(asyncio.Event(), -1) is True
