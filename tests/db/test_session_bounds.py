"""Every session carries its bounds (settings → connection string): a client that stalls inside
a transaction loses its session and its locks after the idle bound, a statement waiting for a
lock gives up after the lock timeout, and only service sessions (collectors, the website) get a
statement timeout; migrations lift the lock and statement timeouts."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from bf4ps.db.connect import Conn, SessionBounds, connect, connection, resolve_url
from bf4ps.db.queries import q
from bf4ps.settings import Settings
from tests.helpers import GATE_ENSURE

SHOW = ("SELECT current_setting('lock_timeout') AS lock, "
        "current_setting('idle_in_transaction_session_timeout') AS idle, "
        "current_setting('statement_timeout') AS stmt, "
        "current_setting('tcp_keepalives_idle') AS ka_idle")


async def _show(url: str) -> dict[str, str]:
    async with connection(url) as c:
        cur = await c.execute(SHOW)
        row = await cur.fetchone()
        assert row is not None
        return {k: str(v) for k, v in row.items()}


async def test_sessions_carry_the_bounds_of_the_settings(db_url: str) -> None:
    settings = Settings(database_url=db_url, db_lock_timeout_seconds=1.5,
                        db_statement_timeout_seconds=20)
    plain = await _show(await resolve_url(settings))
    assert plain["lock"] == "1500ms" and plain["idle"] == "5s" and plain["stmt"] == "0"
    service = await _show(await resolve_url(settings, service=True))
    assert service["stmt"] == "20s" and service["lock"] == "1500ms"
    bounds = SessionBounds.of(settings)
    assert bounds.client_params()["tcp_user_timeout"] == 10_000
    params = psycopg.conninfo.conninfo_to_dict(await resolve_url(settings))
    assert params["keepalives_idle"] == "5" and params["keepalives_count"] == "3"
    # what the operator's URL sets wins over the defaults
    own = await _show(bounded(make_conninfo(db_url, options="-c lock_timeout=7s"), settings))
    assert own["lock"] == "7s"


def bounded(url: str, settings: Settings) -> str:
    return SessionBounds.of(settings).apply(url)


async def test_a_client_stalled_in_a_transaction_loses_its_locks(db_url: str) -> None:
    settings = Settings(database_url=db_url, db_idle_in_transaction_timeout_seconds=1.0,
                        db_lock_timeout_seconds=30)
    url = await resolve_url(settings, service=True)
    async with connection(db_url) as setup:
        await setup.execute(GATE_ENSURE, {"egress_key": "eg-1", "min_interval": 1.0,
                                               "window_requests": None,
                                               "window_seconds": None})
    stalled = await connect(url)
    await stalled.set_autocommit(False)
    await stalled.execute("SELECT * FROM egress_gates WHERE egress_key = 'eg-1' FOR UPDATE")
    # ... and then says nothing more, as a frozen collector would: the waiter gets the row
    # once the server ended the stalled session
    async with connection(url) as waiter:
        cur = await waiter.execute(
            "UPDATE egress_gates SET requests_total = 1 WHERE egress_key = 'eg-1' "
            "RETURNING requests_total")
        assert await cur.fetchone() == {"requests_total": 1}
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
        await stalled.execute("SELECT 1")
    await stalled.close()


async def test_a_lock_wait_gives_up_after_the_lock_timeout(db_url: str) -> None:
    settings = Settings(database_url=db_url, db_lock_timeout_seconds=0.5,
                        db_idle_in_transaction_timeout_seconds=0)
    url = await resolve_url(settings)
    async with connection(db_url) as holder, connection(url) as waiter:
        await holder.execute(GATE_ENSURE, {"egress_key": "eg-1", "min_interval": 1.0,
                                                "window_requests": None,
                                                "window_seconds": None})
        await holder.set_autocommit(False)
        await holder.execute("SELECT 1 FROM egress_gates FOR UPDATE")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            await waiter.execute("UPDATE egress_gates SET requests_total = 2")
        await holder.rollback()


async def test_migrations_lift_the_lock_and_statement_timeouts(conn: Conn) -> None:
    await conn.execute("SET lock_timeout = '1s'")
    await conn.execute("SET statement_timeout = '1s'")
    await conn.execute(q("migration_session"))
    cur = await conn.execute(SHOW)
    row = await cur.fetchone()
    assert row is not None and row["lock"] == "0" and row["stmt"] == "0"


async def test_a_scheduler_step_that_times_out_on_a_lock_is_retried_not_fatal(
        db_url: str) -> None:
    """A lock timeout in one periodic step does not end the scheduler's leadership (which a
    database error does): the step runs again at its next period."""
    from bf4ps.scheduler.service import Every

    settings = Settings(database_url=db_url, db_lock_timeout_seconds=0.2)
    runs: list[str] = []
    async with connection(db_url) as holder, \
            connection(await resolve_url(settings)) as conn:
        await holder.execute(GATE_ENSURE, {"egress_key": "eg-1", "min_interval": 1.0,
                                                "window_requests": None,
                                                "window_seconds": None})

        async def step() -> None:
            runs.append("try")
            await conn.execute("UPDATE egress_gates SET requests_total = 3")
            runs.append("done")

        every = Every(0.0, step)
        await holder.set_autocommit(False)
        await holder.execute("SELECT 1 FROM egress_gates FOR UPDATE")
        await every.maybe()  # gives up on the lock, quietly
        await holder.rollback()
        await every.maybe()
    assert runs == ["try", "try", "done"]
