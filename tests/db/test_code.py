"""The database's code as a source tree (bf4ps.db.code): every function, trigger and view of an
upgraded database is written in one code file per room; `bf4ps db upgrade` re-applies exactly
the files that changed, in one transaction under the migration lock; no migration after the
baseline edits code."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace

import psycopg
import pytest

from bf4ps.db import catalog, code, migrate
from bf4ps.db.connect import Conn, connection
from bf4ps.db.queries import q
from tests.conftest import create_database, drop_database
from tests.db.test_schema import SCHEMA_SQL

FUNCTION = re.compile(r"^CREATE OR REPLACE FUNCTION ([a-z0-9_]+)\(", re.MULTILINE)
VIEW = re.compile(r"^CREATE OR REPLACE VIEW ([a-z0-9_]+) AS", re.MULTILINE)
TRIGGER = re.compile(r"^CREATE OR REPLACE TRIGGER ([a-z0-9_]+) .*? ON ([a-z0-9_]+) ",
                     re.MULTILINE)
# what a migration may not do once the code lives in its files (0031 is the pg_dump baseline
# and 0032 predates the files: both are history, applied as they were)
WRITES_CODE = re.compile(r"\b(CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|VIEW|TRIGGER)|"
                         r"ALTER\s+FUNCTION|DROP\s+FUNCTION|pg_get_functiondef)\b", re.IGNORECASE)
LAST_WITH_CODE = 32


def _written() -> tuple[list[str], list[str], list[tuple[str, str]]]:
    functions: list[str] = []
    views: list[str] = []
    triggers: list[tuple[str, str]] = []
    for f in code.available():
        functions += FUNCTION.findall(f.text)
        views += VIEW.findall(f.text)
        triggers += TRIGGER.findall(f.text)
    return functions, views, triggers


async def _column(conn: Conn, sql: str) -> list[tuple[str, ...]]:
    cur = await conn.execute(sql)
    return sorted(tuple(str(v) for v in row.values()) for row in await cur.fetchall())


async def test_every_function_trigger_and_view_is_in_a_code_file(conn: Conn) -> None:
    functions, views, triggers = _written()
    in_db = await _column(conn, "SELECT p.proname FROM pg_proc p JOIN pg_namespace n "
                                "ON n.oid = p.pronamespace AND n.nspname = 'public'")
    assert sorted(functions) == [name for (name,) in in_db]  # overloads counted once each
    assert sorted(views) == [name for (name,) in await _column(
        conn, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
              "AND n.nspname = 'public' WHERE c.relkind = 'v'")]
    assert sorted(triggers) == await _column(
        conn, "SELECT g.tgname, c.relname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid "
              "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' "
              "WHERE NOT g.tgisinternal")
    assert len(set(functions)) >= 90  # the whole engine, not a sample


def test_each_room_is_one_file_and_every_object_is_in_one_place() -> None:
    _, views, triggers = _written()
    names = [f.name for f in code.available()]
    assert names == sorted(names) and all(re.fullmatch(r"[a-z_]+\.sql", n) for n in names)
    assert len(views) == len(set(views)) and len(triggers) == len(set(triggers))
    by_file: dict[str, set[str]] = {}
    for f in code.available():
        for name in set(FUNCTION.findall(f.text)):
            by_file.setdefault(name, set()).add(f.name)
    assert {n: fs for n, fs in by_file.items() if len(fs) > 1} == {}  # overloads stay together


def test_no_migration_after_the_code_moved_writes_code() -> None:
    later = [m for m in migrate.available() if m.version > LAST_WITH_CODE]
    offenders = {f"{m.version:04d}_{m.name}": WRITES_CODE.findall(m.text) for m in later}
    assert {k: v for k, v in offenders.items() if v} == {}


async def test_an_upgrade_applies_the_one_file_that_changed(db_url: str) -> None:
    files = code.available()
    target = next(f for f in files if f.name == "queue.sql")
    marker = f"-- edited by the test {uuid.uuid4().hex[:8]}"
    text = target.text.replace("AS $function$\n", f"AS $function$\n{marker}\n", 1)
    assert text != target.text
    edited = [replace(f, text=text) if f is target else f for f in files]
    async with connection(db_url) as conn:
        assert await code.apply(conn, files) == []  # nothing changed
        before = await _column(conn, "SELECT file, applied_at FROM schema_code")
        assert [f.name for f in await code.apply(conn, edited)] == ["queue.sql"]
        after = dict(await _column(conn, "SELECT file, applied_at FROM schema_code"))
        assert {f: t for f, t in before if after[f] != t} == {"queue.sql": dict(before)[
            "queue.sql"]}
        cur = await conn.execute(
            "SELECT count(*) AS n FROM pg_proc WHERE prosrc LIKE %s", [f"%{marker}%"])
        assert await cur.fetchone() == {"n": 1}  # the file's first function, now as edited
        assert await code.apply(conn, edited) == []  # and recorded: not applied again
        # the packaged file is the truth: the next upgrade puts it back
        assert [f.name for f in (await migrate.upgrade_all(db_url)).code] == ["queue.sql"]
        cur = await conn.execute(
            "SELECT count(*) AS n FROM pg_proc WHERE prosrc LIKE %s", [f"%{marker}%"])
        assert await cur.fetchone() == {"n": 0}


async def test_a_broken_file_applies_nothing(db_url: str) -> None:
    """All the changed files go in one transaction: one that fails leaves every function as it
    was and nothing recorded, and the error is raised."""
    files = code.available()
    first, last = files[0], files[-1]
    edited = [replace(first, text=first.text + "\n-- changed\n"),
              *files[1:-1], replace(last, text=last.text + "\nSELECT no_such_function();\n")]
    async with connection(db_url) as conn:
        before = await _column(conn, "SELECT file, checksum FROM schema_code")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            await code.apply(conn, edited)
        assert await _column(conn, "SELECT file, checksum FROM schema_code") == before


async def test_upgrade_takes_a_database_at_the_old_schema_to_the_committed_one(
        pg_server_url: str) -> None:
    """A database as the previous build left it — the migrations through 0032 applied, its
    functions those the migrations made, no record of code files — is brought by
    `bf4ps db upgrade` to exactly the committed schema.sql: the later migrations, then every
    code file once; `bf4ps db status` then shows nothing pending."""
    name = f"bf4ps_code_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        async with connection(url) as conn:
            await conn.execute(q("create_migrations_table"))
            for mig in migrate.available():
                if mig.version > LAST_WITH_CODE:
                    break
                async with conn.transaction():
                    await conn.execute(mig.text)  # packaged migration file
                    await conn.execute(q("record_migration"), {
                        "version": mig.version, "name": mig.name, "checksum": mig.checksum})
        assert (await migrate.status(url)).code_pending == [f.name for f in code.available()]
        done = await migrate.upgrade_all(url)
        assert [m.version for m in done.migrations] == [
            m.version for m in migrate.available() if m.version > LAST_WITH_CODE]
        assert [f.name for f in done.code] == [f.name for f in code.available()]
        async with connection(url) as conn:
            assert await catalog.schema_sql(conn) == SCHEMA_SQL.read_text()
        assert (await migrate.status(url)).code_pending == []
        assert (await migrate.upgrade_all(url)).code == []
    finally:
        drop_database(pg_server_url, name)
