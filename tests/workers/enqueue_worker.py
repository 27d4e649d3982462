"""Enqueue one pair from a separate process (races against its siblings). usage: DB_URL"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime

from bf4ps.db.connect import connection
from bf4ps.domain import JobReason, Lane, PriorityClass
from bf4ps.queue.enqueue import Demand, enqueue


async def main() -> None:
    now = datetime.now(UTC)
    async with connection(sys.argv[1]) as conn:
        cur = await conn.execute("SELECT soldier_id FROM soldiers WHERE persona_id = 99")
        row = await cur.fetchone()
        assert row is not None
        demand = Demand(int(str(row["soldier_id"])), "detailed", Lane.BACKGROUND,
                        PriorityClass.BOOTSTRAP, now, JobReason.BOOTSTRAP, now)
        async with conn.transaction():
            result = await enqueue(conn, demand)
    print(json.dumps({"action": result.action}))


if __name__ == "__main__":
    asyncio.run(main())
