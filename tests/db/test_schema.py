"""The migrations produce exactly the intended schema; enumerations agree with bf4ps.domain;
the migration runner is safe under concurrency and refuses drift."""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import uuid
from pathlib import Path

import psycopg
import pytest

from bf4ps.db import catalog, migrate
from bf4ps.db.connect import Conn, connection
from bf4ps.domain import ErrorClass, Lane, Platform, PriorityClass, Resource, StateStatus
from tests.conftest import create_database, drop_database

EXPECTED = Path(__file__).resolve().parent.parent / "schema" / "expected_schema.json"
SCHEMA_SQL = Path(catalog.__file__).resolve().parent / "schema.sql"
REGENERATE = "python -m tests.schema.regenerate"


async def test_migrations_produce_the_intended_schema(conn: Conn) -> None:
    actual = await catalog.describe(conn)
    expected = json.loads(EXPECTED.read_text())
    problems = catalog.diff(expected, actual)
    assert not problems, (
        "schema drift (if intended, regenerate tests/schema/expected_schema.json with "
        f"`{REGENERATE}`):\n" + "\n".join(problems[:40]))


async def test_the_readable_schema_is_the_migrated_one(conn: Conn) -> None:
    """src/bf4ps/db/schema.sql is what the migrations make: a migration that changes the
    schema fails here until the file is regenerated (and the change shows in its diff)."""
    actual = await catalog.schema_sql(conn)
    committed = SCHEMA_SQL.read_text()
    drift = list(difflib.unified_diff(committed.splitlines(), actual.splitlines(),
                                      "schema.sql (committed)", "migrated database", n=1,
                                      lineterm=""))
    assert not drift, (f"src/bf4ps/db/schema.sql is not the migrated schema; if the change is "
                       f"intended run `{REGENERATE}`:\n" + "\n".join(drift[:60]))


def _check_values(definition: str) -> set[str]:
    return set(re.findall(r"'([a-z_0-9]+)'::text", definition))


@pytest.mark.parametrize(("table", "column", "values"), [
    ("soldiers", "platform", {p.value for p in Platform}),
    ("collection_state", "resource", {r.value for r in Resource}),
    ("collection_state", "status", {s.value for s in StateStatus}),
    ("collection_state", "last_error_class", {e.value for e in ErrorClass}),
    ("collection_jobs", "lane", {lane.value for lane in Lane}),
    ("collection_jobs", "priority_class", {c.value for c in PriorityClass}),
    ("collection_jobs", "resource", {r.value for r in Resource} | {"lookup"}),
    ("collection_jobs", "lookup_platform", {p.value for p in Platform}),
    ("collection_events", "error_class", {e.value for e in ErrorClass}),
    ("collectors", "lane", {lane.value for lane in Lane}),
])
def test_check_constraints_match_the_domain(table: str, column: str, values: set[str]) -> None:
    """Every enumerated column accepts exactly the values of bf4ps.domain, whether its rule is
    a table CHECK or the CHECK of the column's domain type."""
    expected = json.loads(EXPECTED.read_text())
    col_type = expected["tables"][table]["columns"][column]["type"]
    if col_type in expected["domains"]:
        defs = [expected["domains"][col_type]]
        assert "(VALUE = ANY" in defs[0], defs
    else:
        defs = [d for d in expected["tables"][table]["constraints"].values()
                if d.startswith("CHECK") and f"({column} = ANY" in d.replace('"', "")]
    assert defs, f"no CHECK on {table}.{column}"
    assert _check_values(defs[0]) == values


async def test_domain_rules_hold(conn: Conn) -> None:
    """The rules moved into domains still refuse what the table CHECKs refused."""
    await conn.execute("INSERT INTO soldiers (persona_id, platform, current_name) "
                       "VALUES (1, 'pc', 'x')")
    await conn.execute("INSERT INTO collection_state (soldier_id, resource) SELECT "
                       "soldier_id, 'detailed' FROM soldiers")
    for bad in ("UPDATE collection_state SET status = 'bogus'",
                "INSERT INTO collection_events (event_type) VALUES ('Not An Event')",
                "INSERT INTO collection_events (event_type, http_status) VALUES ('failed', 99)",
                "INSERT INTO collection_events (event_type, wait_ms) VALUES ('started', -1)"):
        with pytest.raises(psycopg.errors.CheckViolation):
            await conn.execute(bad)


async def test_upgrade_is_idempotent_and_detects_drift(db_url: str) -> None:
    assert await migrate.upgrade(db_url) == []
    st = await migrate.status(db_url)
    assert [v for v, _, _ in st.applied] == [m.version for m in migrate.available()]
    assert st.pending == []
    async with connection(db_url) as conn:
        await conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
    with pytest.raises(migrate.MigrationError, match="changed after it was applied"):
        await migrate.upgrade(db_url)
    good = migrate.available()[0].checksum
    async with connection(db_url) as conn:
        await conn.execute("UPDATE schema_migrations SET checksum = %s WHERE version = 1", [good])
        await conn.execute("INSERT INTO schema_migrations (version, name, checksum) "
                           "VALUES (999, 'future', 'y')")
    # a newer build's migration: status lists it (an older build still in the overlap can
    # look), upgrade refuses (an older build never migrates a newer schema)
    assert 999 in [v for v, _, _ in (await migrate.status(db_url)).applied]
    with pytest.raises(migrate.MigrationError, match="does not know"):
        await migrate.upgrade(db_url)


async def test_concurrent_upgrades_apply_each_migration_once(pg_server_url: str) -> None:
    name = f"bf4ps_mig_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        results = await asyncio.gather(*(migrate.upgrade(url) for _ in range(5)))
        assert sorted(len(r) for r in results) == [0, 0, 0, 0, len(migrate.available())]
        async with connection(url) as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM schema_migrations")
            assert await cur.fetchone() == {"n": len(migrate.available())}
    finally:
        drop_database(pg_server_url, name)


async def test_event_partitions_exist_for_the_coming_months(conn: Conn) -> None:
    cur = await conn.execute(
        "SELECT count(*) AS n FROM pg_inherits WHERE inhparent = 'collection_events'::regclass")
    row = await cur.fetchone()
    assert row is not None and int(str(row["n"])) >= 4  # default + previous/current/next months
    await conn.execute("INSERT INTO collection_events (event_type) VALUES ('created')")
    cur = await conn.execute("SELECT tableoid::regclass::text AS part FROM collection_events")
    part = await cur.fetchone()
    assert part is not None and part["part"] != "collection_events_default"


async def test_0006_takes_back_last_seen_times_that_requests_wrote(conn: Conn) -> None:
    """Written before 0006: a submission set last_seen_at to its own time. The repair gives
    each soldier BF4SW's latest sighting (none: NULL and bootstrap) and re-anchors the state."""
    await conn.execute(
        "INSERT INTO soldiers (soldier_id, persona_id, platform, current_name, first_seen_at, "
        "last_seen_at) OVERRIDING SYSTEM VALUE "
        "VALUES (1, 11, 'pc', 'Played', '2026-01-01', now()), "
        "(2, 12, 'pc', 'Asked', now(), now()), (3, 13, 'pc', 'Right', '2026-01-01', now())")
    await conn.execute(
        "INSERT INTO soldier_sources (soldier_id, source_type, first_seen_at, last_seen_at) "
        "VALUES (1, 'bf4sw', '2026-01-01', '2026-02-01'), (1, 'manual', now(), now()), "
        "(2, 'manual', now(), now()), (3, 'bf4sw', '2026-01-01', '2026-03-01')")
    await conn.execute("UPDATE soldiers SET last_seen_at = '2026-03-01' WHERE soldier_id = 3")
    await conn.execute(
        "INSERT INTO collection_state (soldier_id, resource, activity_class, activity_at) "
        "SELECT soldier_id, 'detailed', 'active', last_seen_at FROM soldiers")
    repair = next(m for m in migrate.available() if m.version == 6)
    async with conn.transaction():
        await conn.execute(repair.text)  # packaged migration file
    cur = await conn.execute(
        "SELECT s.soldier_id, s.last_seen_at::date::text AS seen, cs.activity_class, "
        "cs.activity_at::date::text AS at FROM soldiers s JOIN collection_state cs "
        "USING (soldier_id) ORDER BY 1")
    assert await cur.fetchall() == [
        {"soldier_id": 1, "seen": "2026-02-01", "activity_class": "active", "at": "2026-02-01"},
        {"soldier_id": 2, "seen": None, "activity_class": "bootstrap", "at": None},
        {"soldier_id": 3, "seen": "2026-03-01", "activity_class": "active", "at": "2026-03-01"}]
