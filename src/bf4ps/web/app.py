"""The website's application factory. Nothing happens at import time: create_app builds the
app, its lifespan opens the database pool (unless one is given). The app is FastAPI's (the JSON
API, whose /openapi.json it generates from the read side's types), with the HTML pages, the
console and the static files as plain Starlette routes beside it, under one set of middleware
and error handlers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import jinja2
from fastapi import FastAPI
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import Receive, Scope, Send

from bf4ps.db.compat import application_name
from bf4ps.db.connect import Conn, bounded_url, name_sessions, open_pool, resolve_url
from bf4ps.interactive.submit import Limits
from bf4ps.settings import SendTimings, Settings
from bf4ps.web import api, api_ops, routes_ops, routes_public
from bf4ps.web.compat import ROUTES as COMMUNITY_ROUTES
from bf4ps.web.errors import HANDLERS, LOGGED
from bf4ps.web.format import FILTERS
from bf4ps.web.metrics import Metrics, RequestMetrics
from bf4ps.web.replica import ReadReplica, ReplicaRetry
from bf4ps.web.security import (
    BODY_LIMIT,
    BodyLimit,
    Csrf,
    MetricsAuth,
    OpsAuth,
    SecurityHeaders,
)
from bf4ps.web.state import WebState, pooled

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
POOL_CHECK_IDLE_SECONDS = 1.0  # a pooled connection idle this long is checked before use
# The website's named queries (some 60 in all, under psycopg's 100 prepared statements a
# connection) are prepared on their first use on a connection: unprepared, PostgreSQL parses
# and plans each again, two thirds of the soldier page's database CPU (9.0 against 3.0 ms),
# and with 16 connections taking turns a query waited 5 uses on each before it was prepared.
PREPARE_THRESHOLD = 0


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    return Jinja2Templates(env=env)


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    web: WebState = app.state.web
    if web.pool is None:
        url = await resolve_url(web.settings, service=True)
        size = web.settings.db_pool_max  # all opened now: a request never waits for a connect
        web.pool = await open_pool(url, max_size=size, min_size=size,
                                   check_idle_after=POOL_CHECK_IDLE_SECONDS,
                                   prepare_threshold=PREPARE_THRESHOLD)
        web.owns_pool = True
    watcher = await _open_replica(web)
    if not web.ops.configured:
        log.warning("operator console %s: BF4PS_OPS_USERNAME/BF4PS_OPS_PASSWORD are unset",
                    "open (local demo)" if web.ops.demo else "disabled")
    if web.settle_heap:
        settle_heap(app)
    try:
        yield
    finally:
        await _close_replica(web, watcher)
        if web.owns_pool and web.pool is not None:
            await web.pool.close()
            web.pool = None


async def _open_replica(web: WebState) -> asyncio.Task[None] | None:
    """BF4PS_READ_DATABASE_URL's pool (not waited for: a replica down at start is connected to
    when it is back; meanwhile the reads are the primary's) and its watcher."""
    if not web.settings.read_database_url or web.pool is None:
        return None
    url = bounded_url(web.settings.read_database_url, web.settings, service=True)
    size = web.settings.db_pool_max
    pool = await open_pool(url, max_size=size, min_size=size,
                           check_idle_after=POOL_CHECK_IDLE_SECONDS, wait=False,
                           prepare_threshold=PREPARE_THRESHOLD)
    web.reads = ReadReplica(pool, web.pool, web.settings.read_max_lag_seconds)
    return asyncio.create_task(web.reads.watch(), name="read-replica-watch")


async def _close_replica(web: WebState, watcher: asyncio.Task[None] | None) -> None:
    if watcher is not None:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    if web.reads is not None:
        await web.reads.pool.close()
        web.reads = None


def settle_heap(app: Starlette) -> None:
    """A serving process's objects made at start (routes, models, the API schema, templates:
    some 90,000) leave the garbage collector's generations: a full collection walked them all,
    ~42 ms with every request of the process waiting, now and then under load (web_load's
    tail). Built first, then collected and frozen (gc.freeze), they are never walked again."""
    if isinstance(app, FastAPI):
        app.openapi()  # otherwise built by the first request for it
    env = app.state.web.templates.env
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)  # otherwise compiled by the first page that renders it
    gc.collect()
    gc.freeze()


class WebApp(FastAPI):
    """Starlette re-raises an exception after its 500 handler answered it, so that servers log
    it; on_bug has logged it already, so it ends here (it was logged twice). Any other
    exception (one raised after a response started, say) still reaches the server."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except Exception:
            if not scope.get(LOGGED):
                raise


def create_app(settings: Settings, pool: AsyncConnectionPool[Conn] | None = None, *,
               limits: Limits | None = None, serving: bool = False) -> Starlette:
    """The website and API. With `pool`, that pool is used (and not closed); else the
    lifespan opens one on settings' database. `serving`: the app is its process's one
    server (bf4ps web run, uvicorn's factory), whose start settles the heap (settle_heap)."""
    secret = (settings.secret_key.get_secret_value().encode() if settings.secret_key
              else secrets.token_bytes(32))
    metrics = Metrics(settings.metrics_settle_seconds)
    web = WebState(settings=settings, templates=_templates(), csrf=Csrf(secret),
                   # the lock-out counts go through this app's pool (late: opened at start)
                   ops=OpsAuth(settings, lambda: pooled(web), metrics.login_failed),
                   metrics_auth=MetricsAuth(settings), metrics=metrics,
                   limits=limits or Limits(settings.submit_limit_requests,
                                           settings.submit_limit_window_seconds),
                   gate=SendTimings.from_settings(settings), pool=pool,
                   settle_heap=serving)
    middleware = [Middleware(RequestMetrics, metrics=web.metrics), Middleware(SecurityHeaders),
                  Middleware(BodyLimit, max_bytes=BODY_LIMIT), Middleware(ReplicaRetry)]
    app = WebApp(title="BF4PS — Battlefield 4 Player Stats", version="1",
                 description="Soldier stats collected from Battlelog; interactive collection "
                             "requests; operator figures.",
                 openapi_url="/openapi.json", docs_url=None, redoc_url=None,
                 middleware=middleware, exception_handlers=HANDLERS, lifespan=_lifespan)
    app.include_router(api.router)
    app.include_router(api_ops.router)
    app.router.routes.extend([
        *routes_public.ROUTES, *routes_ops.ROUTES, *COMMUNITY_ROUTES,
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static")])
    app.state.web = web
    app.state.templates = web.templates
    return app


def app_from_env() -> Starlette:
    """For `uvicorn --factory bf4ps.web.app:app_from_env`: settings from BF4PS_* variables;
    its sessions are named like a CLI command's, without one (bf4ps.db.compat)."""
    name_sessions(application_name)
    return create_app(Settings(), serving=True)
