"""The restore guard's receipts (migration 0023): a running collector's signed receipt of a
ledger row the database no longer has holds the fleet one window, once; a forged receipt, one
of a row that is still there, or of a row older than twice the budget window, holds nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bf4ps.db.connect import Conn
from bf4ps.gates.restore import Marks, Receipt, current_hold, receipt


async def a_row(conn: Conn, ago: float = 0.0) -> int:
    row = await (await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
        "VALUES (now() - make_interval(secs => %s), 'eg-r', 'bootstrap') RETURNING request_id",
        (ago,))).fetchone()
    assert row is not None
    return int(row["request_id"])


@pytest.fixture
async def budget(conn: Conn) -> Conn:
    await conn.execute("UPDATE fleet_budget SET requests = 12, window_seconds = 30, "
                       "configured_at = now()")
    await conn.execute("SELECT * FROM bf4ps_restore_check()")  # the guard knows the database
    return conn


async def test_a_lost_row_a_collector_was_counted_in_holds_the_fleet_once(budget: Conn) -> None:
    conn = budget
    seen = await receipt(conn, await a_row(conn))
    assert seen is not None
    assert await current_hold(conn, Marks(seen)) is None  # the row is there
    await conn.execute("DELETE FROM request_ledger")  # the rewind: a data-only restore's
    # ... whose rewound sequence hands the same id out again, for another request
    await conn.execute("INSERT INTO request_ledger (request_id, slot_at, egress_key, "
                       "budget_class) OVERRIDING SYSTEM VALUE VALUES (%s, now() + "
                       "interval '1 second', 'eg-r', 'bootstrap')", (seen.request_id,))
    held = await current_hold(conn, Marks(seen))
    assert held is not None and "the database was rewound" in held.reason, held
    guard = await (await conn.execute(
        "SELECT hold_until - detected_at AS span, detected_at FROM restore_guard")).fetchone()
    assert guard is not None and guard["span"] == timedelta(seconds=30)
    # shown again: the running hold covers it (not extended)
    again = await current_hold(conn, Marks(seen))
    after = await (await conn.execute("SELECT detected_at FROM restore_guard")).fetchone()
    assert again == held and after == {"detected_at": guard["detected_at"]}


async def test_forged_present_and_old_receipts_hold_nothing(budget: Conn) -> None:
    conn = budget
    kept = await receipt(conn, await a_row(conn))
    old = await receipt(conn, await a_row(conn, ago=61))  # older than twice the window
    assert kept is not None and old is not None
    await conn.execute("DELETE FROM request_ledger WHERE request_id = %s", (old.request_id,))
    forged = Receipt(kept.request_id + 1000, kept.slot_at, kept.receipt)
    resigned = Receipt(old.request_id, kept.slot_at, old.receipt)  # a later slot, old sig
    for shown in (kept, old, forged, resigned):
        assert await current_hold(conn, Marks(shown)) is None, shown
    assert await (await conn.execute("SELECT hold_until FROM restore_guard")).fetchone() \
        == {"hold_until": None}


async def test_missing_guard_state_holds_while_it_is_missing(budget: Conn) -> None:
    """A data-only restore empties the tables before it loads them: while the guard's row or
    its key is gone, every check is held (nothing stored), then the loaded row decides."""
    conn = budget
    for table in ("ledger_receipt_key", "restore_guard"):
        async with conn.transaction(force_rollback=True):
            await conn.execute(f"DELETE FROM {table}")  # type: ignore[arg-type]
            held = await current_hold(conn)
            assert held is not None and "restore is under way" in held.reason, (table, held)
    assert await current_hold(conn) is None
