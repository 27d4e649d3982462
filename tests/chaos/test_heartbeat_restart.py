"""Found by the chaos run: a collector the scheduler marked lost (killed, silent past
heartbeat_lost_after) and then restarted with the same identity came back healthy without a
`heartbeat_restored` event, so its next outage wrote a second `heartbeat_lost` in a row.

The architecture promises one `heartbeat_lost` per outage and `heartbeat_restored` on the first
good heartbeat after it. `collector_started` (identity.register) sets health = 'healthy' and
clears heartbeat_lost_at, so the heartbeat that follows sees previous_health = 'healthy': the
restart itself must record the restoration (collector_started returns previous_health)."""

from __future__ import annotations

from pathlib import Path

from bf4ps.collector.heartbeat import Heartbeat
from bf4ps.collector.identity import Wanted, register
from bf4ps.db.connect import Conn, open_pool
from bf4ps.db.queries import q
from bf4ps.domain import Lane

WANT = Wanted("phoenix-01", "test-host", Lane.BACKGROUND, "eg-phoenix", None, "test")


async def _scheduler_detects_silence(conn: Conn) -> list[str]:
    """What the scheduler's tick does once the collector has been silent too long."""
    await conn.execute("UPDATE collectors SET last_heartbeat_at = now() - interval '5 min'")
    cur = await conn.execute(q("collectors_mark_silent"), {"silence_seconds": 45})
    return [r["collector_name"] for r in await cur.fetchall()]


async def _transitions(conn: Conn) -> list[str]:
    cur = await conn.execute(
        "SELECT event_type FROM collection_events WHERE event_type IN "
        "('heartbeat_lost', 'heartbeat_restored') ORDER BY event_id")
    return [r["event_type"] for r in await cur.fetchall()]


async def test_a_lost_collector_restarted_with_its_identity_records_heartbeat_restored(
        conn: Conn, db_url: str, tmp_path: Path) -> None:
    me = await register(conn, tmp_path, WANT)
    # kill -9; the scheduler notices the silence
    assert await _scheduler_detects_silence(conn) == ["phoenix-01"]
    # the operator (or systemd) starts it again with the same data directory
    again = await register(conn, tmp_path, WANT)
    assert again.collector_uuid == me.collector_uuid
    pool = await open_pool(db_url, max_size=1)
    try:
        assert await Heartbeat(pool, again, 1.0, 8.0).beat()
    finally:
        await pool.close()
    cur = await conn.execute("SELECT health FROM collectors")
    assert (await cur.fetchone() or {})["health"] == "healthy"
    # the outage is over: it must be closed in the event log
    assert await _transitions(conn) == ["heartbeat_lost", "heartbeat_restored"]
    # the next outage: lost must not follow lost
    assert await _scheduler_detects_silence(conn) == ["phoenix-01"]
    assert await _transitions(conn) == ["heartbeat_lost", "heartbeat_restored",
                                        "heartbeat_lost"]
