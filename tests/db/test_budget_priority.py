"""The fleet budget gives a waiting player's request priority: while interactive work is
runnable and an interactive collector serves, background collectors leave the interactive floor
of the window free, so the player's requests take the next free slots instead of queueing
behind background ones."""

from __future__ import annotations

from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.domain import Lane, PriorityClass
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted, Wait
from bf4ps.queue.jobs import CollectorRef
from bf4ps.settings import SendTimings
from tests.helpers import (
    FLEET_CONFIGURE,
    GATE_ENSURE,
    add_job,
    count,
    make_collector,
    make_soldier,
    seed_work,
    set_policy,
)

N, W = 20, 60.0
GATE = SendTimings(margin=0.05, horizon=5.0, lease_seconds=30.0)
FLOOR_INTERACTIVE = 0.20  # 4 of 20
LEDGER = "SELECT count(*) FROM request_ledger WHERE budget_class = %(c)s"


async def _collector(conn: Conn, tmp_path: Path, name: str, lane: Lane) -> CollectorRef:
    me = await make_collector(conn, tmp_path, name, lane=lane, egress=f"eg-{name}")
    await conn.execute(GATE_ENSURE, {"egress_key": me.egress_key, "min_interval": 0.1,
                                          "window_requests": None, "window_seconds": None})
    return me


async def _fill_window(conn: Conn, n: int) -> None:
    await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
        "SELECT clock_timestamp() - make_interval(secs => g), 'eg-other', 'recent' "
        "FROM generate_series(1, %s) g", [n])


async def test_background_leaves_the_interactive_floor_free_while_a_player_waits(
        conn: Conn, tmp_path: Path) -> None:
    await seed_work(conn, 5)
    await conn.execute("UPDATE collection_jobs SET priority_class = 'recent'")
    await conn.execute(FLEET_CONFIGURE, {"requests": N, "window_seconds": W})
    await set_policy(conn, budget_floor_interactive=FLOOR_INTERACTIVE)
    background = await _collector(conn, tmp_path, "bg-01", Lane.BACKGROUND)
    player = await _collector(conn, tmp_path, "int-01", Lane.INTERACTIVE)
    await _fill_window(conn, N - 5)  # 5 slots left

    # no player waits: background may take the window's free slots
    first = await admission.admit(conn, background, GATE)
    assert isinstance(first, Admitted) and first.job.lane is Lane.BACKGROUND

    # a player's request arrives while no interactive collector serves: nothing could use the
    # floor, so nothing is reserved
    soldier = await make_soldier(conn, 4_000_000_001)
    await add_job(conn, soldier, "detailed", PriorityClass.INTERACTIVE)
    await _health(conn, player, "stopped")
    assert isinstance(await admission.admit(conn, background, GATE), Admitted)

    # the interactive collector serves again: the 3 slots left are within its floor of 4,
    # background waits
    await _health(conn, player, "healthy")
    refused = await admission.admit(conn, background, GATE)
    assert isinstance(refused, Wait) and not refused.idle
    taken = await admission.admit(conn, player, GATE)
    assert isinstance(taken, Admitted) and taken.job.lane is Lane.INTERACTIVE

    # the floor is reserved only while interactive work waits; none does now
    assert await count(conn, LEDGER, {"c": "interactive"}) == 1
    again = await admission.admit(conn, background, GATE)
    assert isinstance(again, Admitted)
    assert await count(conn, LEDGER, {"c": "recent"}) == N - 5 + 3


async def _health(conn: Conn, me: CollectorRef, health: str) -> None:
    await conn.execute("UPDATE collectors SET health = %s WHERE collector_uuid = %s",
                       [health, me.collector_uuid])
