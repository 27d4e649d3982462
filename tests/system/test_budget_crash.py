"""The fleet budget's running count across a real crash: its buckets are unlogged (they copy
what request_ledger holds, so they write no WAL), crash recovery empties them, and the first
ledger write or admission afterwards makes them again from the ledger before counting."""

from __future__ import annotations

import asyncio
import os

import pytest

from bf4ps.db.connect import connection
from tests.helpers import count
from tests.pgctl import crash, migrated_database, private_server, start

pytestmark = [
    pytest.mark.server_features, pytest.mark.skipif(
        bool(os.environ.get("BF4PS_TEST_DATABASE_URL")),
        reason="crashes a private embedded server")]

BY_BUCKET = """
SELECT s.span, s.span * floor(extract(epoch FROM l.slot_at) / s.span)::bigint AS starts_at,
       l.budget_class, count(*)::integer AS n
FROM request_ledger l, (VALUES (1), (60)) s(span)
WHERE l.unsent_at IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"""
BUCKETS = "SELECT span, starts_at, budget_class, n FROM budget_buckets ORDER BY 1, 2, 3"


async def test_buckets_emptied_by_crash_recovery_are_made_again_from_the_ledger() -> None:
    with private_server() as (server, pgdata):
        url = await migrated_database(server)
        async with connection(url) as conn:
            await conn.execute(
                "INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                "SELECT clock_timestamp() - make_interval(secs => g), 'eg-1', "
                "(ARRAY['active', 'recent'])[1 + g % 2] FROM generate_series(1, 200) g")
            await conn.execute("CHECKPOINT")  # a logged table's rows would now survive
            assert await count(conn, "SELECT sum(n) FROM budget_buckets WHERE span = 60") == 200
        options = await asyncio.to_thread(crash, pgdata)
        await asyncio.to_thread(start, pgdata, options)
        async with connection(url) as conn:
            # crash recovery reset the unlogged tables: the buckets and their ready row
            assert await count(conn, "SELECT count(*) FROM budget_buckets") == 0
            assert await count(conn, "SELECT count(*) FROM budget_buckets_ready") == 0
            assert await count(conn, "SELECT count(*) FROM counted_requests") == 200
            await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                               "VALUES (clock_timestamp(), 'eg-1', 'recent')")
            buckets = await (await conn.execute(BUCKETS)).fetchall()
            assert buckets == await (await conn.execute(BY_BUCKET)).fetchall()
            assert await count(conn, "SELECT sum(n) FROM budget_buckets WHERE span = 60") == 201
