"""The website's pool checks a connection before use only when it sat idle (db/connect.py
IdleCheck): one the server dropped while idle is replaced before a request gets it; one dropped
moments after its last use fails the one request that gets it, and the pool replaces it."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from bf4ps.db.connect import Conn, open_pool

AFTER = 0.3  # seconds idle before a connection is checked (the website uses 1 s)


async def _pid(conn: Conn) -> int:
    row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
    assert row is not None
    return int(row["pid"])


async def _drop(conn: Conn, pid: int) -> None:
    """End the backend as a server restart or a proxy would, and wait until it is gone."""
    await conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


async def test_a_connection_dropped_while_idle_is_replaced_before_use(
        db_url: str, conn: Conn) -> None:
    pool = await open_pool(db_url, max_size=1, min_size=1, check_idle_after=AFTER)
    try:
        async with pool.connection() as c:
            first = await _pid(c)
        await _drop(conn, first)
        await asyncio.sleep(AFTER * 1.5)  # idle past the threshold (asyncio sleeps at least this)
        async with pool.connection() as c:  # checked: found dead, replaced, no error
            second = await _pid(c)
        assert second != first
    finally:
        await pool.close()


async def test_a_connection_dropped_just_after_use_fails_one_request_then_is_replaced(
        db_url: str, conn: Conn) -> None:
    pool = await open_pool(db_url, max_size=1, min_size=1, check_idle_after=60)
    try:
        async with pool.connection() as c:
            first = await _pid(c)
        await _drop(conn, first)
        with pytest.raises(psycopg.OperationalError):  # not checked: the request sees it
            async with pool.connection() as c:
                await _pid(c)
        async with pool.connection(timeout=10) as c:
            assert await _pid(c) != first
    finally:
        await pool.close()


async def test_without_a_threshold_every_use_is_checked(db_url: str, conn: Conn) -> None:
    pool = await open_pool(db_url, max_size=1, min_size=1)
    try:
        async with pool.connection() as c:
            first = await _pid(c)
        await _drop(conn, first)
        async with pool.connection() as c:  # checked at once: replaced, no error
            assert await _pid(c) != first
    finally:
        await pool.close()


async def test_the_websites_pool_prepares_a_query_on_its_first_use(db_url: str) -> None:
    """The website's connections make each named query a prepared statement the first time
    they run it (web/app.py PREPARE_THRESHOLD): PostgreSQL parses and plans it once per
    connection, not on each of a query's first uses on every one of the pool's connections."""
    from bf4ps.db.queries import Record, all_rows
    from bf4ps.web.app import PREPARE_THRESHOLD

    pool = await open_pool(db_url, max_size=1, min_size=1, prepare_threshold=PREPARE_THRESHOLD)
    try:
        async with pool.connection() as c:
            await all_rows(c, Record, "web_ping")
            rows = await (await c.execute(
                "SELECT statement FROM pg_prepared_statements", prepare=False)).fetchall()
        assert any("SELECT 1" in str(r["statement"]) for r in rows), rows
    finally:
        await pool.close()
