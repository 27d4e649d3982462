"""What the community-compatible endpoints' tests share: the app in process on its own pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from psycopg_pool import AsyncConnectionPool

from bf4ps.db.connect import Conn, open_pool
from bf4ps.interactive.submit import Limits
from bf4ps.web.app import create_app
from tests.db.test_web_api import SETTINGS, client_for

OPEN_LIMITS = Limits(1000, 60)  # submissions a test makes never reach it


@asynccontextmanager
async def community_client(db_url: str, limits: Limits = OPEN_LIMITS
                           ) -> AsyncIterator[httpx.AsyncClient]:
    """The website in process (httpx over ASGI) with `limits` on submissions."""
    pool: AsyncConnectionPool[Conn] = await open_pool(db_url, max_size=4)
    try:
        async with client_for(create_app(SETTINGS, pool=pool, limits=limits)) as c:
            yield c
    finally:
        await pool.close()
