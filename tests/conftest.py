"""Real PostgreSQL for every test: the embedded server by default, or BF4PS_TEST_DATABASE_URL.

A template database is migrated once per session; each test gets a database as the template left
it (a copy, put back as new between tests: tests/dbcopies.py).

The tiers (docs/testing.md) are the directories: a test's tier marker (unit, db, system,
browser, netns, chaos) is given here from where its file lies, never by hand. The suite's
load factor (tests/load.py) is measured once at the start and scales every deadline, the
per-test timeouts included.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import Conn, connection, with_dbname
from tests import load
from tests.dbcopies import Copies

REPO = Path(__file__).resolve().parent.parent
# the `logins` fixture: a login role per least-privilege role (tests/roles.py)
pytest_plugins = ("tests.roles",)

TESTS = REPO / "tests"
# the first folder under tests/ → its tier; tests/integration (the old home of db and system
# tests, where a file may still be added) runs as system: it may start processes and ports
TIERS = {"unit": "unit", "db": "db", "system": "system", "integration": "system",
         "acceptance": "system", "browser": "browser", "netns": "netns", "chaos": "chaos"}


def tier_of(path: Path) -> str:
    try:
        top = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return "system"
    return TIERS.get(top, "system")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        load.publish()  # before the workers are spawned: they inherit it


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.fleet import stop_idle_simulators

    stop_idle_simulators()


def pytest_report_header(config: pytest.Config) -> str:
    return f"load factor {load.slowdown():g} (deadlines scaled; {load.ENV} sets it)"


BASE_TIMEOUT = pytest.StashKey[float]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    default = float(config.getoption("timeout", None) or config.getini("timeout") or 0)
    for item in items:
        item.add_marker(getattr(pytest.mark, tier_of(item.path)))
        marker = item.get_closest_marker("timeout")
        item.stash[BASE_TIMEOUT] = float(marker.args[0]) if marker and marker.args else default
    items.sort(key=cost_rank)


def cost_rank(item: pytest.Item) -> int:
    """The longest first: `long` tests (minutes), then `slow` ones (seconds), then the rest. The
    xdist workers take tests in this order (one at a time, a few ahead), so the short ones fill
    the end of the run instead of one worker ending it alone on a test of minutes. A stable
    sort: within a rank, the collection's order (every worker collects the same)."""
    if item.get_closest_marker("long"):
        return 0
    return 1 if item.get_closest_marker("slow") else 2


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A test's timeout is its quiet-machine timeout times the load factor when it starts (a
    machine that got busier since the suite began gives its later tests more time); outermost,
    so pytest-timeout reads the marker after it is set."""
    base, factor = item.stash.get(BASE_TIMEOUT, 0.0), load.slowdown()
    if factor > 1 and base > 0:
        item.add_marker(pytest.mark.timeout(base * factor), append=False)
    yield


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
    _durability_off(url)
    yield url
    embedded.stop(base / "data")
    shutil.rmtree(base, ignore_errors=True)


# The suite's own throw-away server needs no crash safety: without a flush to disk at every
# commit and every CREATE DATABASE its work is CPU-bound, not waiting on the disk. (A crash
# loses a server that is deleted at the end anyway; tests/pgctl.py's private servers, which
# tests restart, keep the defaults.)
NO_DURABILITY = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _durability_off(url: str) -> None:
    with _admin(url) as conn:
        for name, value in NO_DURABILITY.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")


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


# The migrations create roles, which belong to the whole server: workers that share one server
# (BF4PS_TEST_DATABASE_URL) migrate their templates one at a time, under an advisory lock taken
# in the server's own database (an advisory lock only excludes sessions of the same database).
TEMPLATE_LOCK = 0x62663470_0001


@pytest.fixture(scope="session")
async def template_db(pg_server_url: str) -> AsyncIterator[str]:
    name = f"bf4ps_tpl_{os.getpid()}"
    url = create_database(pg_server_url, name)
    with _admin(pg_server_url) as lock:
        lock.execute("SELECT pg_advisory_lock(%s)", [TEMPLATE_LOCK])
        await migrate.upgrade(url)
    yield name
    drop_database(pg_server_url, name)


@pytest.fixture(scope="session")
def copies(pg_server_url: str, template_db: str) -> Iterator[Copies]:
    """This worker's copies of the template, put back as new between tests (tests/dbcopies.py)."""
    made = Copies(pg_server_url, template_db)
    made.learn()
    yield made
    made.drop_all()


@pytest.fixture
def db_url(pg_server_url: str, copies: Copies) -> Iterator[str]:
    """A migrated database as the template left it, for one test."""
    name = copies.take()
    yield with_dbname(pg_server_url, name)
    from tests.fleet import stop_every_fleet

    stop_every_fleet()  # processes of this test go before their database is reset
    copies.give_back(name)


@pytest.fixture
async def conn(db_url: str) -> AsyncIterator[Conn]:
    async with connection(db_url) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    yield
    from tests.fleet import stop_every_fleet

    stop_every_fleet()
