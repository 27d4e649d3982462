"""Plausibility of an answer against what is stored (stats/plausible.py), through the real
finalize path on a real PostgreSQL: the real captured answers (tests/guarded.py) are
stored, then perturbed answers are finalized against them."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bf4ps.battlelog.models import Parsed
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import Resource
from bf4ps.policy import Policy
from bf4ps.queue.jobs import CollectorRef, Outcome
from bf4ps.stats import archive, plausible
from tests import guarded
from tests.guarded import CAPTURES, parsed_capture
from tests.helpers import count, make_collector, make_soldier

POLICY = Policy(reset_confirmations=3, reset_min_span_seconds=0)
PARSED = {r: parsed_capture(r) for r in CAPTURES}


async def collect(conn: Conn, me: CollectorRef, soldier_id: int, resource: Resource,
                  parsed: Parsed, policy: Policy = POLICY,
                  raw: archive.RawAnswer | None = None) -> Outcome:
    return await guarded.collect(conn, me, soldier_id, resource, parsed, policy, raw)


def perturbed(resource: Resource, parsed: Parsed, changes: guarded.Changes) -> Parsed:
    return guarded.perturbed(parsed, changes)


async def stored(conn: Conn, resource: Resource,
                 soldier_id: int) -> dict[str, int | float | None]:
    got = await plausible.stored_counters(conn, resource, soldier_id)
    assert got is not None
    return got


@st.composite
def lowering(draw: st.DrawFn, resource: Resource) -> dict[str, int | float | None]:
    """At least one positive counter lowered (or nulled), others raised or kept."""
    counters = plausible.counters_of(resource, PARSED[resource])
    positive = sorted(k for k, v in counters.items() if v)
    lowered = draw(st.lists(st.sampled_from(positive), min_size=1, max_size=4, unique=True))
    changes: dict[str, int | float | None] = {}
    for key in lowered:
        old = counters[key]
        assert old is not None
        below = (st.integers(0, old - 1) if isinstance(old, int)
                 else st.floats(0, old, exclude_max=True))
        changes[key] = draw(st.one_of(st.none(), below))
    for key in draw(st.lists(st.sampled_from(sorted(counters)), max_size=4, unique=True)):
        if key not in changes:
            changes[key] = (counters[key] or 0) + draw(st.integers(0, 10**6))
    return changes


async def _lower_never_stored(db_url: str, tmp_path: Path, resource: Resource, n: int,
                              changes: dict[str, int | float | None]) -> None:
    async with connection(db_url) as conn:
        me = await make_collector(conn, tmp_path, "plausible-1")
        soldier = await make_soldier(conn, 2_000_000 + n)
        assert (await collect(conn, me, soldier, resource, PARSED[resource])).committed
        before = await stored(conn, resource, soldier)
        outcome = await collect(conn, me, soldier, resource,
                                perturbed(resource, PARSED[resource], changes))
        assert outcome.event.value == "retry_scheduled"  # retried, not parked
        assert await stored(conn, resource, soldier) == before  # never stored as current
        state = await count(conn, "SELECT count(*) FROM collection_state WHERE soldier_id = "
                                  "%(s)s AND resource = %(r)s AND status = 'retry_wait' AND "
                                  "last_error_class = 'implausible'",
                            {"s": soldier, "r": resource.value})
        assert state == 1


@pytest.mark.parametrize("resource", list(CAPTURES))
def test_an_answer_with_any_counter_lower_than_stored_is_never_stored(
        db_url: str, tmp_path: Path, resource: Resource) -> None:
    examples = iter(range(10_000))

    @given(changes=lowering(resource))
    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(changes: dict[str, int | float | None]) -> None:
        asyncio.run(_lower_never_stored(db_url, tmp_path, resource, next(examples), changes))

    run()


async def test_an_all_zero_answer_after_a_career_is_implausible_and_counted(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "zeros-1")
    soldier = await make_soldier(conn, 2_100_001)
    await collect(conn, me, soldier, Resource.DETAILED, PARSED[Resource.DETAILED])
    zeros = perturbed(Resource.DETAILED, PARSED[Resource.DETAILED],
                      dict.fromkeys(plausible.COUNTERS[Resource.DETAILED], 0))
    outcome = await collect(conn, me, soldier, Resource.DETAILED, zeros)
    assert outcome.event.value == "retry_scheduled"
    row = await _one(conn, "SELECT error_class, error_message, details FROM collection_events "
                           "WHERE event_type = 'failed' AND soldier_id = %(s)s", {"s": soldier})
    assert row["error_class"] == "implausible" and "all-zero" in row["error_message"]
    assert row["details"]["zeros"] == 1 and row["details"]["now"]["kills"] == 0
    assert row["details"]["was"]["kills"] > 0


async def test_a_reset_is_believed_after_agreeing_answers_and_keeps_the_old_values(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "reset-1")
    soldier = await make_soldier(conn, 2_100_002)
    original = PARSED[Resource.DETAILED]
    await collect(conn, me, soldier, Resource.DETAILED, original)
    old = await stored(conn, Resource.DETAILED, soldier)
    after_reset = [perturbed(Resource.DETAILED, original, {
        "kills": k, "deaths": k, "score": 100 * k, "time_played_seconds": 60 * k,
        "num_rounds": k}) for k in (1, 2, 3)]
    first, second, third = [await collect(conn, me, soldier, Resource.DETAILED, p)
                            for p in after_reset]
    assert first.event.value == second.event.value == "retry_scheduled"
    assert third.event.value == "succeeded"
    now = await stored(conn, Resource.DETAILED, soldier)
    assert now["kills"] == 3 and now["score"] == 300
    reset = await _one(conn, "SELECT details FROM collection_events WHERE event_type = "
                             "'stats_reset' AND soldier_id = %(s)s", {"s": soldier})
    assert reset["details"]["was"]["kills"] == old["kills"]
    kept = await count(conn, "SELECT count(*) FROM detailed_stats_history WHERE soldier_id = "
                             "%(s)s AND kills = %(k)s", {"s": soldier, "k": old["kills"]})
    assert kept == 1  # the old career stays in the history
    assert await count(conn, "SELECT count(*) FROM answer_suspects") == 0


async def test_answers_that_disagree_restart_the_run_and_a_span_is_required(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "reset-2")
    soldier = await make_soldier(conn, 2_100_003)
    original = PARSED[Resource.DETAILED]
    await collect(conn, me, soldier, Resource.DETAILED, original)
    policy = Policy(reset_confirmations=2, reset_min_span_seconds=3600)
    lower = perturbed(Resource.DETAILED, original, {"kills": 5})
    for _ in range(4):  # agreeing, but all within the hour: never believed
        outcome = await collect(conn, me, soldier, Resource.DETAILED, lower, policy)
        assert outcome.event.value == "retry_scheduled"
    run = await _one(conn, "SELECT answers FROM answer_suspects WHERE soldier_id = %(s)s",
                     {"s": soldier})
    assert run["answers"] == 4
    await conn.execute("UPDATE answer_suspects SET first_at = first_at - %(d)s",
                       {"d": timedelta(hours=2)})
    lower_still = perturbed(Resource.DETAILED, original, {"kills": 4})  # lower than the run
    assert (await collect(conn, me, soldier, Resource.DETAILED, lower_still,
                          policy)).event.value == "retry_scheduled"
    run = await _one(conn, "SELECT answers FROM answer_suspects WHERE soldier_id = %(s)s",
                     {"s": soldier})
    assert run["answers"] == 1  # it disagreed with the run: a new run begins


async def test_a_first_answer_of_zeros_is_stored_but_unconfirmed_until_a_second_agrees(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "first-1")
    soldier = await make_soldier(conn, 2_100_004)
    zeros = perturbed(Resource.DETAILED, PARSED[Resource.DETAILED],
                      dict.fromkeys(plausible.COUNTERS[Resource.DETAILED], 0))
    assert (await collect(conn, me, soldier, Resource.DETAILED, zeros)).committed
    assert (await stored(conn, Resource.DETAILED, soldier))["kills"] == 0
    flag = await _one(conn, "SELECT kind FROM answer_suspects WHERE soldier_id = %(s)s",
                      {"s": soldier})
    assert flag["kind"] == "unconfirmed_zero"
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'stats_unconfirmed' AND soldier_id = %(s)s", {"s": soldier}) == 1
    assert (await collect(conn, me, soldier, Resource.DETAILED, zeros)).committed
    assert await count(conn, "SELECT count(*) FROM answer_suspects") == 0


async def _one(conn: Conn, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    cur = await conn.execute(sql, params)  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    return dict(row)
