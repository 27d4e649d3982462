"""Every lifetime counter guarded (stats/counters.py, stats/plausible.py), on real PostgreSQL
through the real finalize path, starting from the real captures of all four resources: an
answer that lowers or nulls any guarded counter writes nothing (no stats, no history row, no
interval), and over sequences that include such answers the gains are never negative and sum
to the total change."""

from __future__ import annotations

import asyncio
from itertools import count as numbers
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bf4ps.battlelog.models import DetailedStats, Parsed, WeaponItem
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import Resource
from bf4ps.policy import Policy
from bf4ps.stats import plausible
from tests.guarded import CAPTURES, Changes, collect, parsed_capture, perturbed
from tests.helpers import count, make_collector, make_soldier

# no run of agreeing lowered answers is ever believed as a reset here
POLICY = Policy(reset_confirmations=1000, reset_min_span_seconds=0)
TABLES = ("detailed_stats_current", "detailed_stats_history", "profile_current",
          "soldier_weapon_stats", "soldier_weapon_history", "soldier_vehicle_stats",
          "soldier_vehicle_history", "soldier_intervals", "item_intervals")
SERIAL = numbers(3_000_000)
RUN = settings(max_examples=8, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))


async def written(conn: Conn, soldier_id: int) -> dict[str, str | None]:
    """Everything stored for the soldier, table by table (a digest of its rows)."""
    out = {}
    for table in TABLES:
        cur = await conn.execute(
            f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS d FROM {table} t "
            "WHERE soldier_id = %(s)s", {"s": soldier_id})
        row = await cur.fetchone()
        out[table] = None if row is None else row["d"]
    return out


@st.composite
def lowering(draw: st.DrawFn, counters: plausible.Counters) -> Changes:
    """At least one stored counter (zeros too) nulled or lowered, others raised or kept."""
    known = sorted(k for k, v in counters.items() if v is not None)
    changes: Changes = {}
    for key in draw(st.lists(st.sampled_from(known), min_size=1, max_size=3, unique=True)):
        old = counters[key]
        assert old is not None
        lower = (st.integers(0, int(old) - 1) if isinstance(old, int)
                 else st.floats(0, old, exclude_max=True))
        changes[key] = draw(st.none() if old <= 0 else st.one_of(st.none(), lower))
    for key in draw(st.lists(st.sampled_from(known), max_size=4, unique=True)):
        if key not in changes:
            changes[key] = (counters[key] or 0) + draw(st.integers(0, 10**6))
    return changes


def answers(resource: Resource) -> list[tuple[Parsed, Changes]]:
    parsed = parsed_capture(resource)
    return [(parsed, plausible.counters_of(resource, parsed))]


async def _never_written(db_url: str, tmp_path: Path, resource: Resource, parsed: Parsed,
                         changes: Changes) -> None:
    async with connection(db_url) as conn:
        me = await make_collector(conn, tmp_path, "guard-1")
        soldier = await make_soldier(conn, next(SERIAL))
        assert (await collect(conn, me, soldier, resource, parsed, POLICY)).committed
        before = await written(conn, soldier)
        outcome = await collect(conn, me, soldier, resource, perturbed(parsed, changes),
                                POLICY)
        assert outcome.event.value == "retry_scheduled", changes  # refused, not parked
        assert await written(conn, soldier) == before, changes


@pytest.mark.parametrize("resource", list(CAPTURES))
def test_lowering_or_nulling_any_guarded_counter_writes_nothing(
        db_url: str, tmp_path: Path, resource: Resource) -> None:
    ((parsed, counters),) = answers(resource)

    @given(changes=lowering(counters))
    @RUN
    def run(changes: Changes) -> None:
        asyncio.run(_never_written(db_url, tmp_path, resource, parsed, changes))

    run()


def grown(parsed: Parsed, resource: Resource, by: int) -> Parsed:
    """Every guarded integer counter `by` higher (a session's play)."""
    counters = plausible.counters_of(resource, parsed)
    return perturbed(parsed, {k: v + by for k, v in counters.items() if isinstance(v, int)})


Step = tuple[str, int, Changes]  # ("grow", by, {}) or ("bad", 0, changes)


@st.composite
def sequences(draw: st.DrawFn, resource: Resource, first: Parsed) -> list[Step]:
    steps: list[Step] = []
    current = first
    for _ in range(draw(st.integers(2, 6))):
        if draw(st.booleans()):
            by = draw(st.integers(0, 40))
            current = grown(current, resource, by)
            steps.append(("grow", by, {}))
        else:
            steps.append(("bad", 0, draw(lowering(plausible.counters_of(resource, current)))))
    return steps


async def _gains_add_up(db_url: str, tmp_path: Path, resource: Resource, first: Parsed,
                        steps: list[Step]) -> None:
    async with connection(db_url) as conn:
        me = await make_collector(conn, tmp_path, "guard-2")
        soldier = await make_soldier(conn, next(SERIAL))
        truth = first
        assert (await collect(conn, me, soldier, resource, truth, POLICY)).committed
        for kind, by, changes in steps:
            answer = perturbed(truth, changes) if kind == "bad" else grown(truth, resource, by)
            outcome = await collect(conn, me, soldier, resource, answer, POLICY)
            assert outcome.event.value == ("retry_scheduled" if kind == "bad" else "succeeded")
            truth = truth if kind == "bad" else answer
        stored = await plausible.stored_counters(conn, resource, soldier)
        assert stored == plausible.counters_of(resource, truth)
        table = "soldier_intervals" if resource is Resource.DETAILED else "item_intervals"
        assert await count(conn, f"SELECT count(*) FROM {table} WHERE soldier_id = %(s)s "
                                 "AND (reset OR kills < 0 OR seconds < 0)", {"s": soldier}) == 0
        gained = await count(conn, f"SELECT sum(kills) FROM {table} WHERE soldier_id = %(s)s",
                             {"s": soldier})
        assert gained == _kills(truth) - _kills(first)


def _kills(parsed: Parsed) -> int:
    if isinstance(parsed, DetailedStats):
        return parsed.kills or 0
    assert isinstance(parsed, tuple)
    return sum(i.kills or 0 for i in parsed if isinstance(i, WeaponItem))


@pytest.mark.parametrize("resource", [Resource.DETAILED, Resource.WEAPONS])
def test_gains_never_go_negative_and_sum_to_the_change_with_refused_answers_between(
        db_url: str, tmp_path: Path, resource: Resource) -> None:
    first = parsed_capture(resource)
    if isinstance(first, tuple):  # a dozen weapons with time (a gain needs both) keeps it quick
        first = tuple(w for w in first if isinstance(w, WeaponItem)
                      and w.kills is not None and w.time_equipped_seconds is not None)[:12]

    @given(steps=sequences(resource, first))
    @RUN
    def run(steps: list[Step]) -> None:
        asyncio.run(_gains_add_up(db_url, tmp_path, resource, first, steps))

    run()
