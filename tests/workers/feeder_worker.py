"""Feed in a loop with a huge target (to be killed with kill -9 mid-feed). usage: DB_URL"""

from __future__ import annotations

import asyncio
import sys

from bf4ps.db.connect import connection
from bf4ps.policy import Policy
from bf4ps.scheduler import feeder


async def main() -> None:
    async with connection(sys.argv[1]) as conn:
        print("feeding", flush=True)
        while True:
            await feeder.replenish(conn, Policy(working_set_background=100_000))
            await conn.execute("DELETE FROM collection_jobs WHERE job_id IN "
                               "(SELECT job_id FROM collection_jobs LIMIT 3000)")


if __name__ == "__main__":
    asyncio.run(main())
