"""A serving web process freezes its start's objects out of the garbage collector (web/app.py
settle_heap); an app that is not its process's server (the tests', the demo's in-process ones)
leaves the collector alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from psycopg_pool import AsyncConnectionPool

from bf4ps.settings import Settings
from bf4ps.web.app import create_app

SETTINGS = Settings(database_url="host=/nonexistent", secret_key="k")


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def _pool() -> AsyncConnectionPool:  # type: ignore[type-arg]
    return AsyncConnectionPool("host=/nonexistent", open=False)  # given: the start opens none


async def test_a_servers_start_freezes_what_it_made(unfrozen: None) -> None:
    app = create_app(SETTINGS, _pool(), serving=True)
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() > 10_000  # the app's routes, models, schema, templates
        env = app.state.web.templates.env
        assert len(env.cache) == len(env.list_templates(extensions=["html"]))  # compiled


async def test_an_app_that_is_not_its_processs_server_leaves_the_collector_alone(
        unfrozen: None) -> None:
    app = create_app(SETTINGS, _pool())
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() == 0
