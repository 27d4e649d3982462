"""What the routes share: settings, the database pool, templates, CSRF, operator auth, metrics,
and the interactive submission limits. Built by create_app, stored on app.state.web."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from bf4ps.db.connect import Conn
from bf4ps.interactive.submit import Limits
from bf4ps.settings import SendTimings, Settings
from bf4ps.web.metrics import Metrics
from bf4ps.web.replica import READ_PRIMARY, READ_SOURCE, ReadReplica, ReplicaLost
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
    gate: SendTimings
    pool: AsyncConnectionPool[Conn] | None = None
    owns_pool: bool = False
    reads: ReadReplica | None = None  # BF4PS_READ_DATABASE_URL's, opened by the lifespan
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


@asynccontextmanager
async def db(request: Request) -> AsyncIterator[Conn]:
    request.scope.setdefault(READ_SOURCE, "primary")
    async with pooled(state_of(request)) as conn:
        yield conn


REPLICA_WAIT_SECONDS = 1.0  # a read waits this long for a replica connection, then the primary's


@asynccontextmanager
async def read_db(request: Request) -> AsyncIterator[Conn]:
    """A connection for a read that may be up to BF4PS_READ_MAX_LAG_SECONDS stale (the public
    pages' and the console's charts'): the read replica's while it is fresh enough, else the
    primary's (web/replica.py). Anything written, or read to decide a write, uses db()."""
    web = state_of(request)
    if web.reads is not None and web.reads.fresh() and not request.scope.get(READ_PRIMARY):
        async with AsyncExitStack() as stack:
            try:
                conn = await stack.enter_async_context(
                    web.reads.pool.connection(timeout=REPLICA_WAIT_SECONDS))
            except (PoolTimeout, psycopg.OperationalError):
                web.reads.lost()
            else:
                request.scope[READ_SOURCE] = "replica"
                web.metrics.reads.labels("replica").inc()
                try:
                    yield conn
                except psycopg.OperationalError as exc:
                    web.reads.lost()
                    raise ReplicaLost(str(exc)) from exc
                return
    web.metrics.reads.labels("primary").inc()
    async with db(request) as conn:
        yield conn


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
