"""The chaos tier's own deadline (tests/chaos/watch.py): a run past it ends with a report of its
phase and its stuck step, not a bare timeout; a run within it gives its result; a restart says
how each of its parts went."""

from __future__ import annotations

import asyncio

from tests.chaos.harness import Chaos
from tests.chaos.watch import Watch, run_within


async def _stuck_run(watch: Watch, release: asyncio.Event, cleaned: list[str]) -> str:
    watch.enter("chaos: the plan's faults")
    try:
        with watch.step("kill -9 of c1 at t+3 and its restart"):
            await asyncio.sleep(0)
        with watch.step("PostgreSQL restart 1 (t+20): pg_ctl stop -m fast"):
            await release.wait()
        return "finished"
    finally:
        cleaned.append("clean-up ran")


async def test_a_run_past_its_deadline_reports_its_phase_and_stuck_step() -> None:
    watch, cleaned = Watch(), []
    done = await run_within(_stuck_run(watch, asyncio.Event(), cleaned), 0.3, watch,
                            lambda: "processes:\n 4242 postgres: checkpointer")
    assert isinstance(done, str)
    lines = done.splitlines()
    assert lines[0].startswith("the chaos run passed its deadline of 0 s in phase "
                               "'chaos: the plan's faults'")
    assert lines[1].startswith("stuck step (the longest in flight): PostgreSQL restart 1 "
                               "(t+20): pg_ctl stop -m fast, for ")
    assert lines[2].startswith("ended before: kill -9 of c1 at t+3 and its restart (")
    assert "4242 postgres: checkpointer" in done
    assert cleaned == ["clean-up ran"]  # cancelled, and its clean-up had its time


async def test_a_run_within_its_deadline_gives_its_result() -> None:
    watch, release, cleaned = Watch(), asyncio.Event(), []
    release.set()
    assert await run_within(_stuck_run(watch, release, cleaned), 5, watch, str) == "finished"
    assert watch.running == {}


def test_a_restart_explains_itself() -> None:
    assert Chaos._restart_note(2, 61.4, [1.25, 0.5], None) == (
        "PostgreSQL restart 2 at t+61: stop 1.2 s, start 0.5 s, shutdown fast")
    stuck = "fast shutdown unfinished after 20 s: processes: ..."
    assert Chaos._restart_note(1, 30, [21.0], stuck) == (
        f"PostgreSQL restart 1 at t+30: stop 21.0 s, start did not end, shutdown made "
        f"immediate: {stuck}")
