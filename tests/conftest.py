"""Real PostgreSQL for every test: the embedded server by default, or BF4PS_TEST_DATABASE_URL.

A template database is migrated once per session; each test gets its own copy of it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import Conn, connection, with_dbname

REPO = Path(__file__).resolve().parent.parent
# the `logins` fixture: a login role per least-privilege role (tests/roles.py)
pytest_plugins = ("tests.roles",)


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    external = os.environ.get("BF4PS_TEST_DATABASE_URL")
    if external:
        yield external
        return
    # Not under pytest's basetemp: every pytest run re-tightens that folder to 0700, which would
    # lock the server (running as its own user) out of its data directory.
    base = Path(tempfile.mkdtemp(prefix="bf4ps-test-pg-"))
    base.chmod(0o755)
    url = embedded.start(base / "data", cleanup_mode="delete")
    yield url
    embedded.stop(base / "data")
    shutil.rmtree(base, ignore_errors=True)


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


def create_database(server_url: str, name: str, template: str | None = None) -> str:
    with _admin(server_url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            stmt = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template))
        conn.execute(stmt)
    return with_dbname(server_url, name)


def drop_database(server_url: str, name: str) -> None:
    with _admin(server_url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture(scope="session")
async def template_db(pg_server_url: str) -> AsyncIterator[str]:
    name = f"bf4ps_tpl_{os.getpid()}"
    url = create_database(pg_server_url, name)
    await migrate.upgrade(url)
    yield name
    drop_database(pg_server_url, name)


@pytest.fixture
def db_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = f"bf4ps_t_{uuid.uuid4().hex[:12]}"
    url = create_database(pg_server_url, name, template=template_db)
    with psycopg.connect(url, autocommit=True) as admin:  # what `bf4ps db upgrade` does on it
        admin.execute("SELECT bf4ps_no_temporary()")
    yield url
    from tests.fleet import stop_every_fleet

    stop_every_fleet()  # processes of this test go before their database does
    drop_database(pg_server_url, name)


@pytest.fixture
async def conn(db_url: str) -> AsyncIterator[Conn]:
    async with connection(db_url) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    yield
    from tests.fleet import stop_every_fleet

    stop_every_fleet()
