"""The website under a real uvicorn server (a port of its own): what only the server shows."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bf4ps.settings import Settings
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread


async def test_a_bug_is_answered_500_and_logged_once_under_uvicorn(
        caplog: pytest.LogCaptureFixture) -> None:
    """A real server: Starlette re-raises a handled exception for the server to log, and
    uvicorn did ('Exception in ASGI application'), so every 500 was logged twice."""
    from starlette.routing import Route

    async def boom(request: Any) -> Any:
        raise RuntimeError("a bug")

    app = create_app(Settings())
    app.router.routes.insert(0, Route("/api/boom", boom))
    # no lifespan (no pool: the route needs none); uvicorn's records reach caplog
    with serve_in_thread(app, lifespan="off", log_config=None) as base, \
            caplog.at_level("ERROR"):
        async with httpx.AsyncClient() as c:
            answer = await c.get(f"{base}/api/boom")
    assert answer.status_code == 500 and answer.json()["error"] == "internal error"
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.getMessage() for r in errors] == ["unhandled error for GET /api/boom"]
