"""What the intake may cost BF4SW's database: every query on its connection is read-only,
under a statement timeout, and the reconciliation reads bounded pages (the same identities in
the same order whatever the page size)."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from bf4ps.db.connect import Conn
from bf4ps.scheduler.intake_source import seen_identities, source_connection, source_now
from bf4ps.sim.bf4sw import population
from tests.db.test_bf4sw_intake import sw, sw_name, sw_url  # noqa: F401 - fixtures


async def test_the_source_connection_is_read_only_with_a_statement_timeout(
        sw_url: str) -> None:  # noqa: F811
    async with source_connection(sw_url, statement_timeout=0.5) as c:
        row = await (await c.execute("SHOW statement_timeout")).fetchone()
        assert row == {"statement_timeout": "500ms"}
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            await c.execute("SELECT pg_sleep(3)")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await c.execute("CREATE TABLE intake_may_not (a int)")
    async with source_connection(sw_url) as c:  # the default: 30 s
        assert await (await c.execute("SHOW statement_timeout")).fetchone() == {
            "statement_timeout": "30s"}


async def test_reconciliation_pages_are_bounded_and_complete(
        sw: Conn, sw_url: str) -> None:  # noqa: F811
    await population.fill(sw, 400, seed=5)
    async with source_connection(sw_url) as c:
        now = await source_now(c)
        since = now - timedelta(days=30)
        whole = await seen_identities(c, since, now, page=100_000)
        paged = await seen_identities(c, since, now, page=7)
    assert len(whole) > 50
    assert paged == whole
