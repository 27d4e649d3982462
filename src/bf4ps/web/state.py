"""What the routes share: settings, the database pool, templates, CSRF, operator auth, metrics,
and the interactive submission limits. Built by create_app, stored on app.state.web."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from bf4ps.db.connect import Conn
from bf4ps.interactive.submit import Limits
from bf4ps.settings import Settings
from bf4ps.views.estimate import GateDefaults
from bf4ps.web.metrics import Metrics
from bf4ps.web.security import Csrf, MetricsAuth, OpsAuth, set_csrf_cookie


@dataclass
class WebState:
    settings: Settings
    templates: Jinja2Templates
    csrf: Csrf
    ops: OpsAuth
    metrics_auth: MetricsAuth
    metrics: Metrics
    limits: Limits
    gate: GateDefaults
    pool: AsyncConnectionPool[Conn] | None = None
    owns_pool: bool = False
    settle_heap: bool = False  # freeze the start's objects out of the GC (app.settle_heap)


def state_of(request: Request) -> WebState:
    web: WebState = request.app.state.web
    return web


@asynccontextmanager
async def pooled(web: WebState) -> AsyncIterator[Conn]:
    if web.pool is None:
        raise RuntimeError("the database pool is not open")
    async with web.pool.connection() as conn:
        yield conn


def db(request: Request) -> AbstractAsyncContextManager[Conn]:
    return pooled(state_of(request))


def render(request: Request, name: str, context: dict[str, Any], status: int = 200,
           headers: dict[str, str] | None = None) -> Response:
    """A template response with the CSRF token (and its cookie when new) and the clock."""
    web = state_of(request)
    token, fresh = web.csrf.token_for(request)
    ctx = {"csrf_token": token, "now": datetime.now(UTC),
           "ops_enabled": web.ops.configured or web.ops.demo, **context}
    response = web.templates.TemplateResponse(request, name, ctx, status_code=status,
                                              headers=headers)
    if fresh:
        set_csrf_cookie(response, token, request)
    return response
