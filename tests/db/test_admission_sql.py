"""The fleet budget's class arithmetic and slot rules, now server-side (migration 0008:
budget_allowed_classes, admission_slot), checked in the database itself."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from bf4ps.collector.slots import unsent
from bf4ps.db.connect import Conn, connection, resolve_url
from bf4ps.domain import PriorityClass
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted, Slot, Wait
from bf4ps.policy import Policy
from bf4ps.settings import SendTimings, Settings
from tests.helpers import (
    GATE_ENSURE,
    add_job,
    gated_collector,
    make_collector,
    make_soldier,
)

BACKGROUND = ["active", "recent", "bootstrap", "retry"]
GATE = SendTimings(margin=0.05, horizon=5.0, lease_seconds=30.0)


def _policy(pol: Policy) -> Jsonb:
    return Jsonb({"cap_active": pol.budget_cap_active,
                  "floor_interactive": pol.budget_floor_interactive,
                  "floor_bootstrap": pol.budget_floor_bootstrap,
                  "floor_retry": pol.budget_floor_retry})


async def allowed(conn: Conn, n: int, used: dict[str, int], demand: set[str], pol: Policy,
                  *, interactive_lane: bool = False) -> list[str]:
    cur = await conn.execute(
        "SELECT budget_allowed_classes(%s, %s, %s, %s, %s) AS c",
        [n, Jsonb(used), sorted(demand), _policy(pol), interactive_lane])
    row: dict[str, Any] | None = await cur.fetchone()
    assert row is not None
    return list(row["c"])


async def test_fleet_budget_classes_respect_caps_and_floors(conn: Conn) -> None:
    pol = Policy()
    assert "active" not in await allowed(conn, 100, {"active": 75}, {"bootstrap"}, pol)
    # 80 used, 20 left: all of it is bootstrap's reserved floor, so only bootstrap may go
    w = {"active": 70, "bootstrap": 0, "recent": 10}
    assert await allowed(conn, 100, w, {"bootstrap"}, pol) == ["bootstrap"]
    # no bootstrap demand: its floor is borrowable
    assert "recent" in await allowed(conn, 100, w, set(), pol)
    assert await allowed(conn, 100, {"active": 100}, set(), pol) == []
    assert await allowed(conn, 100, {}, set(), pol) == BACKGROUND


async def test_a_waiting_player_request_keeps_its_floor_free_of_background_work(
        conn: Conn) -> None:
    pol = Policy(budget_floor_interactive=0.05)  # 5 of 100
    w = {"active": 70, "bootstrap": 26}  # 4 left
    assert "bootstrap" in await allowed(conn, 100, w, {"bootstrap"}, pol)
    assert await allowed(conn, 100, w, {"bootstrap", "interactive"}, pol) == []
    # the floor is the interactive share, not a gift on top of it: once used, it is spent
    used = {"active": 70, "bootstrap": 20, "interactive": 5}
    assert "bootstrap" in await allowed(conn, 100, used, {"bootstrap", "interactive"}, pol)
    # the interactive lane (its retries too) waits for no floor, only for a full window
    assert set(await allowed(conn, 100, {"active": 99}, {"bootstrap", "retry"}, pol,
                             interactive_lane=True)) == {"interactive", *BACKGROUND}
    assert await allowed(conn, 100, {"active": 100}, set(), pol, interactive_lane=True) == []


async def test_a_full_window_places_the_slot_after_the_nth_latest(conn: Conn,
                                                                  tmp_path: Path) -> None:
    """Three slots of a budget of 3 per 10 s in the window: the next slot is the oldest of
    them + W + margin (every window then holds at most 3). The slots are 5-7 s old, so that
    slot lies 3 s ahead: later than the connect lead from now even on a loaded machine."""
    me = await gated_collector(conn, tmp_path, budget=(3, 10.0))
    await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
        "SELECT clock_timestamp() - make_interval(secs => g), 'eg-other', 'recent' "
        "FROM generate_series(5, 7) g")
    await add_job(conn, await make_soldier(conn, 91), "detailed", PriorityClass.RECENT)
    cur = await conn.execute("SELECT min(slot_at) AS oldest FROM request_ledger")
    oldest = (await cur.fetchone() or {})["oldest"]
    got = await admission.admit(conn, me, GATE)
    assert isinstance(got, Admitted), got
    assert got.slot.at == oldest + timedelta(seconds=10.05)


async def test_a_further_slot_is_fenced_by_the_jobs_lease(conn: Conn, tmp_path: Path) -> None:
    """extra_slot counts nothing for a job whose lease is no longer ours (a resumed zombie)."""
    me = await gated_collector(conn, tmp_path)
    await add_job(conn, await make_soldier(conn, 92), "profile", PriorityClass.RECENT)
    got = await admission.admit(conn, me, GATE)
    assert isinstance(got, Admitted)
    assert isinstance(await admission.extra_slot(conn, me, GATE, got.job), Slot)
    await conn.execute("UPDATE collection_jobs SET lease_expires_at = clock_timestamp()")
    zombie = await admission.extra_slot(conn, me, GATE, got.job)
    assert zombie == Wait(None)
    await conn.execute("UPDATE collection_jobs SET lease_expires_at = now() + interval '1 min',"
                       " lease_token = gen_random_uuid()")
    assert await admission.extra_slot(conn, me, GATE, got.job) == Wait(None)
    cur = await conn.execute("SELECT count(*) AS n FROM request_ledger")
    assert (await cur.fetchone() or {})["n"] == 2


async def test_without_a_budget_admission_never_touches_the_fleet_row(
        db_url: str, tmp_path: Path) -> None:
    """Another session holds the fleet budget row (as a stalled collector of the old
    admission did): with no budget set, admission does not wait for it."""
    settings = Settings(database_url=db_url, db_lock_timeout_seconds=0.5)
    async with connection(db_url) as holder, \
            connection(await resolve_url(settings, service=True)) as conn:
        me = await make_collector(conn, tmp_path, "bg-1", egress="eg-1")
        await conn.execute(GATE_ENSURE, {"egress_key": "eg-1", "min_interval": 0.1,
                                              "window_requests": None, "window_seconds": None})
        await add_job(conn, await make_soldier(conn, 93), "detailed", PriorityClass.RECENT)
        await holder.set_autocommit(False)
        await holder.execute("SELECT * FROM fleet_budget FOR UPDATE")
        assert isinstance(await admission.admit(conn, me, GATE), Admitted)
        await holder.rollback()


async def test_the_budget_window_counts_each_class_of_the_window_once(conn: Conn) -> None:
    """budget_window (migration 0032: one pass, a count per class) answers what a GROUP BY of
    the window's counted requests answers: the classes present and their counts, the total and
    the newest slot; requests before the window and requests given up (unsent) do not count."""
    rows = [("recent", -50), ("recent", -10), ("retry", -5), ("interactive", 2),
            ("bootstrap", -120), ("active", -1)]
    for cls, secs in rows:
        await conn.execute(
            "INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
            "VALUES (clock_timestamp() + make_interval(secs => %s), 'eg-w', %s)", [secs, cls])
    await conn.execute("UPDATE request_ledger SET unsent_at = clock_timestamp() + interval '1 h' "
                       "WHERE budget_class = 'active'")
    cur = await conn.execute(
        "SELECT w.used, w.total, "
        "w.last_slot = (SELECT max(slot_at) FROM request_ledger) AS newest, "
        "(SELECT jsonb_object_agg(budget_class, n) FROM (SELECT budget_class, count(*) AS n "
        " FROM counted_requests WHERE slot_at > clock_timestamp() - interval '60 s' "
        " GROUP BY budget_class) g) AS grouped "
        "FROM budget_window(clock_timestamp(), 60) w")
    got = await cur.fetchone()
    assert got is not None
    assert got["used"] == {"recent": 2, "retry": 1, "interactive": 1} == got["grouped"]
    assert got["total"] == 4 and got["newest"]
    empty = await (await conn.execute(  # the window holds what is after its start
        "SELECT used, total, last_slot FROM budget_window(clock_timestamp() + interval '1 day', 1)"
    )).fetchone()
    assert empty == {"used": {}, "total": 0, "last_slot": None}


async def test_a_slot_given_up_unsent_hands_its_place_back_only_when_it_is_the_latest(
        conn: Conn, tmp_path: Path) -> None:
    """A request late at its checks gives its slot up (collector/slots.py): the slot stops
    counting, and while no later slot of the egress was counted the gate's next slot goes back
    to it, so the next request waits for its connect lead, not a whole interval. A later slot
    counted meanwhile keeps the gate where that one put it (its spacing is never shortened)."""
    me = await gated_collector(conn, tmp_path)
    await conn.execute("UPDATE egress_gates SET min_interval_seconds = 2")
    for persona in (94, 95):
        await add_job(conn, await make_soldier(conn, persona), "detailed", PriorityClass.RECENT)
    first = await admission.admit(conn, me, GATE)
    assert isinstance(first, Admitted)

    async def next_slot() -> Any:
        cur = await conn.execute("SELECT next_slot_at FROM egress_gates")
        return (await cur.fetchone() or {})["next_slot_at"]

    assert await next_slot() == first.slot.at + timedelta(seconds=2.05)
    await unsent(conn, me, first.job, first.slot)
    assert await next_slot() == first.slot.at  # handed back: nothing counted after it
    await unsent(conn, me, first.job, first.slot)  # a second time changes nothing
    assert await next_slot() == first.slot.at
    again = await admission.extra_slot(conn, me, GATE, first.job)
    assert isinstance(again, Slot) and again.at < first.slot.at + timedelta(seconds=2)
    later = await admission.extra_slot(conn, me, GATE, first.job)  # counted after `again`
    assert isinstance(later, Slot)
    kept = await next_slot()
    await unsent(conn, me, first.job, again)  # not the latest: the gate stays
    assert await next_slot() == kept == later.at + timedelta(seconds=2.05)
    cur = await conn.execute("SELECT count(*) AS n FROM counted_requests")
    assert (await cur.fetchone() or {})["n"] == 1  # `later` alone counts
