"""supervise(): a side task that dies ends the work loop (cancelled) with its Failure; one that
returns while the collector stops is no failure; the loop ending stops the side tasks."""

from __future__ import annotations

import asyncio

from bf4ps.collector.supervise import Failure, supervise


async def test_a_side_task_that_dies_cancels_the_loop() -> None:
    stop = asyncio.Event()
    cancelled = asyncio.Event()

    async def loop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def beat() -> None:
        await asyncio.sleep(0.01)
        raise KeyError("boom")

    failure = await supervise(loop(), {"heartbeat": beat()}, stop)
    assert isinstance(failure, Failure) and failure.task == "heartbeat"
    assert "heartbeat died: KeyError" in str(failure)
    assert cancelled.is_set()


async def test_a_side_task_returning_early_is_a_failure_unless_stopping() -> None:
    stop = asyncio.Event()

    async def loop() -> None:
        await asyncio.Event().wait()

    async def quits() -> None:
        return None

    failure = await supervise(loop(), {"clock": quits()}, stop)
    assert failure is not None and str(failure) == "clock ended unexpectedly"

    stop = asyncio.Event()
    finished = asyncio.Event()

    async def finishing_loop() -> None:
        stop.set()  # SIGTERM: the heartbeat ends first, the request in flight after
        await asyncio.sleep(0.05)
        finished.set()

    async def beat() -> None:
        await stop.wait()

    assert await supervise(finishing_loop(), {"heartbeat": beat()}, stop) is None
    assert finished.is_set()


async def test_the_loop_ending_stops_the_side_tasks() -> None:
    stop = asyncio.Event()
    beats = []

    async def loop() -> None:
        await asyncio.sleep(0.02)

    async def beat() -> None:
        while not stop.is_set():
            beats.append(1)
            await asyncio.sleep(0.005)

    assert await supervise(loop(), {"heartbeat": beat()}, stop) is None
    assert stop.is_set() and beats
