"""The gauges the alert rules watch beyond the fleet's own (deploy/prometheus/): scheduler
leadership from the lock's real holder, and the BF4SW intake's health from intake_state."""

from __future__ import annotations

from bf4ps.db.connect import Conn, connection
from bf4ps.scheduler.intake import CURSOR, record_error
from bf4ps.scheduler.service import SCHEDULER_LOCK
from bf4ps.web.metrics import Metrics


async def scrape(conn: Conn) -> str:
    return (await Metrics().render(conn)).decode()


async def test_scheduler_leading_counts_the_lock_holder(conn: Conn, db_url: str) -> None:
    assert "bf4ps_scheduler_leading 0.0" in await scrape(conn)
    async with connection(db_url) as leader:
        await leader.execute("SELECT pg_advisory_lock(%s)", [SCHEDULER_LOCK])
        assert "bf4ps_scheduler_leading 1.0" in await scrape(conn)
    assert "bf4ps_scheduler_leading 0.0" in await scrape(conn)


async def test_intake_failing_and_success_age(conn: Conn) -> None:
    await conn.execute("INSERT INTO intake_state (source_name, last_alias_id, last_run_at, "
                       "last_success_at) VALUES (%s, 5, now(), now() - interval '20 minutes')",
                       [CURSOR])
    text = await scrape(conn)
    assert f'bf4ps_intake_failing{{source="{CURSOR}"}} 0.0' in text
    age = next(line for line in text.splitlines()
               if line.startswith(f'bf4ps_intake_success_age_seconds{{source="{CURSOR}"}}'))
    assert 1190 < float(age.split()[-1]) < 1300, age
    await record_error(conn, RuntimeError("BF4SW refused"))
    assert f'bf4ps_intake_failing{{source="{CURSOR}"}} 1.0' in await scrape(conn)


async def test_restore_hold_seconds(conn: Conn) -> None:
    assert "bf4ps_restore_hold_seconds 0.0" in await scrape(conn)
    await conn.execute("UPDATE restore_guard SET hold_until = now() + interval '10 minutes'")
    line = next(ln for ln in (await scrape(conn)).splitlines()
                if ln.startswith("bf4ps_restore_hold_seconds "))
    assert 590 < float(line.split()[1]) <= 600, line
