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
from bf4ps.db.queries import q
from bf4ps.domain import ErrorClass, Lane, Platform, PriorityClass, Resource, StateStatus
from tests.conftest import create_database, drop_database
from tests.pgctl import embedded_program
from tests.schema import squash

EXPECTED = Path(__file__).resolve().parent.parent / "schema" / "expected_schema.json"
SCHEMA_SQL = Path(catalog.__file__).resolve().parent / "schema.sql"
REGENERATE = "python -m tests.schema.regenerate"
FIRST = migrate.available()[0]


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
        await conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = %s",
                           [FIRST.version])
    with pytest.raises(migrate.MigrationError, match="changed after it was applied"):
        await migrate.upgrade(db_url)
    async with connection(db_url) as conn:
        await conn.execute("UPDATE schema_migrations SET checksum = %s WHERE version = %s",
                           [FIRST.checksum, FIRST.version])
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


async def _record_squashed_history(db_url: str, through: int) -> None:
    """Make the database's bookkeeping that of one migrated, file by file, before the squash."""
    async with connection(db_url) as conn:
        await conn.execute("DELETE FROM schema_migrations")
        for version, checksum in migrate.squashed().items():
            if version <= through:
                await conn.execute("INSERT INTO schema_migrations (version, name, checksum) "
                                   "VALUES (%s, 'squashed', %s)", [version, checksum])


async def test_a_database_migrated_before_the_squash_gets_only_what_follows(
        pg_server_url: str) -> None:
    """A database at the baseline's schema whose bookkeeping is the file-by-file history (as
    every database the previous build migrated): the upgrade applies only the migrations after
    the baseline and ends at the committed schema."""
    known = migrate.available()
    base = migrate.baseline(known)
    assert base is not None and set(migrate.squashed()) == set(range(1, base.version + 1))
    name = f"bf4ps_old_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        async with connection(url) as conn:
            await conn.execute(q("create_migrations_table"))
            async with conn.transaction():
                await conn.execute(base.text)  # packaged migration file
        await _record_squashed_history(url, base.version)
        done = await migrate.upgrade(url)
        assert [m.version for m in done] == [m.version for m in known[1:]]
        async with connection(url) as conn:
            assert await catalog.schema_sql(conn) == SCHEMA_SQL.read_text()
            await conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 7")
        with pytest.raises(migrate.MigrationError, match="migration 7_squashed changed after"):
            await migrate.upgrade(url)
    finally:
        drop_database(pg_server_url, name)


async def test_a_database_stopped_before_the_baseline_is_refused(db_url: str) -> None:
    base = migrate.baseline(migrate.available())
    assert base is not None
    await _record_squashed_history(db_url, base.version - 3)
    with pytest.raises(migrate.MigrationError,
                       match=f"at migration {base.version - 3:04d}, before this build's baseline"):
        await migrate.upgrade(db_url)
    async with connection(db_url) as conn:  # refused before anything ran
        cur = await conn.execute("SELECT max(version) AS v FROM schema_migrations")
        assert await cur.fetchone() == {"v": base.version - 3}


async def test_the_squash_tool_writes_a_baseline_that_makes_this_schema(
        db_url: str, pg_server_url: str) -> None:
    """`python -m tests.schema.squash` on a migrated database: its output, loaded into an empty
    database, makes exactly the committed schema (so the next squash can be made the same way),
    with the seeded rows and a receipt key of that database's own."""
    newest = migrate.available()[-1].version
    text = squash.baseline(squash.dump(db_url, embedded_program("pg_dump")), newest)
    assert "-- Name:" not in text and "\\restrict" not in text  # plain statements only
    name = f"bf4ps_sq_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        async with connection(url) as conn:
            await conn.execute(q("create_migrations_table"))  # the runner's (its grants: here)
            async with conn.transaction():
                await conn.execute(text)  # written from this suite's own database
            assert await catalog.schema_sql(conn) == SCHEMA_SQL.read_text()
            row = await (await conn.execute(
                "SELECT (SELECT count(*) FROM fleet_budget) AS budgets, (SELECT ledger_relid = "
                "'request_ledger'::regclass FROM restore_guard) AS anchored, "
                "(SELECT length(secret) FROM ledger_receipt_key) AS key_bytes")).fetchone()
            assert row == {"budgets": 1, "anchored": True, "key_bytes": 32}
        async with connection(db_url) as conn:
            theirs = await (await conn.execute("SELECT secret FROM ledger_receipt_key")).fetchone()
        async with connection(url) as conn:
            ours = await (await conn.execute("SELECT secret FROM ledger_receipt_key")).fetchone()
        assert theirs != ours
    finally:
        drop_database(pg_server_url, name)
