"""The restore guard's marks (migration 0026): each check hands the caller a signed mark of
where the database stood, shown at the next check. A mark of a ledger row that is gone, or of
a WAL position beyond where this server's run began, holds the fleet one window, once; a
forged or foreign mark holds nothing. A new server run is held from its start (one window at
most) until a running process shows a mark of an earlier run that the database still
reaches."""

from __future__ import annotations

from datetime import timedelta

from bf4ps.db.connect import Conn
from bf4ps.gates.restore import Marks, current_hold

MARK = """
SELECT p || ':' || bf4ps_mark_sign(p) AS mark FROM (
    SELECT %(sysid)s::text || ':' || %(start_us)s || ':' || %(lsn)s || ':' || %(newest)s
           || ':' || (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS p) x
"""


async def setting(conn: Conn, window: float) -> None:
    await conn.execute("UPDATE fleet_budget SET requests = 12, window_seconds = %s, "
                       "configured_at = now()", (window,))
    await conn.execute("SELECT * FROM bf4ps_restore_check()")  # the guard knows the database


async def a_row(conn: Conn) -> None:
    await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                       "VALUES (now(), 'eg-m', 'bootstrap')")


async def signed(conn: Conn, *, start_us: int, lsn: str, newest: int,
                 sysid: int | None = None) -> str:
    """A mark as the database signs it (the test's superuser may call the signer)."""
    if sysid is None:
        got = await (await conn.execute(
            "SELECT system_identifier AS s FROM pg_control_system()")).fetchone()
        assert got is not None
        sysid = int(got["s"])
    row = await (await conn.execute(MARK, {"sysid": sysid, "start_us": start_us, "lsn": lsn,
                                           "newest": newest})).fetchone()
    assert row is not None
    return str(row["mark"])


async def guard(conn: Conn) -> dict[str, object]:
    row = await (await conn.execute(
        "SELECT hold_until, detected_at, hold_until - detected_at AS span, run_vouched_at "
        "FROM restore_guard")).fetchone()
    assert row is not None
    return row


async def test_a_mark_of_a_ledger_row_that_is_gone_holds_the_fleet_once(conn: Conn) -> None:
    await setting(conn, 30)
    await a_row(conn)
    marks = Marks()
    assert await current_hold(conn, marks) is None
    assert marks.mark is not None
    shown = marks.mark
    await conn.execute("DELETE FROM request_ledger")  # the rewind (a data-only restore's)
    held = await current_hold(conn, marks)
    assert held is not None and "the database was rewound" in held.reason, held
    first = await guard(conn)
    assert first["span"] == timedelta(seconds=30)
    assert marks.mark != shown  # the holder now has the rewound database's mark
    # the same old mark shown again (another process's copy): the running hold covers it
    assert await current_hold(conn, Marks(mark=shown)) == held
    assert await current_hold(conn, marks) == held
    assert (await guard(conn))["detected_at"] == first["detected_at"]


async def test_forged_and_foreign_marks_hold_nothing(conn: Conn) -> None:
    await setting(conn, 30)
    await a_row(conn)
    marks = Marks()
    await current_hold(conn, marks)
    assert marks.mark is not None
    head = marks.mark.rsplit(":", 1)[0]
    parts = head.split(":")
    bigger = ":".join([*parts[:3], str(int(parts[3]) + 1000), parts[4]])
    forged = [f"{head}:{'0' * 64}", f"{bigger}:{marks.mark.rsplit(':', 1)[1]}", "nonsense",
              "1:2:0/0:3:4:" + "a" * 64,
              await signed(conn, sysid=1, start_us=1, lsn="FF/0", newest=10**9)]
    for mark in forged:
        assert await current_hold(conn, Marks(mark=mark)) is None, mark
    assert (await guard(conn))["hold_until"] is None


async def new_run(conn: Conn) -> None:
    """The guard last looked at an earlier run of the server (as after a restart)."""
    await conn.execute("UPDATE restore_guard SET run_started_at = '2000-01-01', "
                       "run_vouched_at = '2000-01-01', run_lsn = '0/0'")


async def test_a_new_run_is_held_until_a_running_process_vouches_for_it(conn: Conn) -> None:
    # a window long enough that a hold from the shared server's start is still running
    await setting(conn, 30 * 86400)
    await a_row(conn)
    newest = 10**6  # no such row: beyond the ledger, a rewind (the second case)
    await new_run(conn)
    fresh = await current_hold(conn, Marks())
    assert fresh is not None and "no running process has vouched" in fresh.reason, fresh
    assert (await guard(conn))["detected_at"] is None  # computed, nothing stored
    # a mark of the earlier run, at a WAL position the database still reaches: vouched
    low = await signed(conn, start_us=946684800000000, lsn="0/0", newest=0)
    assert await current_hold(conn, Marks(mark=low)) is None
    assert await current_hold(conn, Marks()) is None
    assert (await guard(conn))["run_vouched_at"] is not None
    # a mark of an earlier run beyond where this run began: a restored base backup
    await new_run(conn)
    await conn.execute("UPDATE restore_guard SET run_started_at = NULL")  # ... never looked
    assert await current_hold(conn, Marks()) is None  # a first run: nothing to vouch for
    await new_run(conn)
    await current_hold(conn, Marks())  # the run begins at the current WAL position
    high = await signed(conn, start_us=946684800000000, lsn="FFFF/0", newest=0)
    held = await current_hold(conn, Marks(mark=high))
    assert held is not None and "a base backup or a copy of the data directory" in held.reason
    assert (await guard(conn))["span"] == timedelta(seconds=30 * 86400)
    gone = await signed(conn, start_us=946684800000000, lsn="0/0", newest=newest)
    await conn.execute("UPDATE restore_guard SET hold_until = NULL, detected_at = NULL")
    held = await current_hold(conn, Marks(mark=gone))
    assert held is not None and "is gone" in held.reason, held
