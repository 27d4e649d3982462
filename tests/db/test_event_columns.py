"""The columns of collection_events are named once, in the table: EVENT_COLUMNS (what
queue/events.record() accepts) is the table's writable columns, the one-event insert
(insert_event) writes every one of them, and each set-based INSERT INTO collection_events
written in a named query or in a function the migrations left behind (its latest definition,
as the database holds it) names only columns the table has. A column added to the table, or a
typo in one of the lists, fails here instead of at the first run of that statement."""

from __future__ import annotations

import re

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_queries, q
from bf4ps.events.log import EVENT_COLUMNS

_INSERT = re.compile(r"\bINSERT\s+INTO\s+collection_events\s*\(([^)]*)\)", re.IGNORECASE)
# set by the database (event_id; recorded_by, the writer's session_user: migration 0033), or
# by the caller's clock (occurred_at, written only by statements that date an event after its
# transition, e.g. queue_claim's lease_expired)
GENERATED = ("event_id", "occurred_at", "recorded_by")
# record() takes these apart from its keyword fields
RECORD_ARGUMENTS = ("event_type", "details")


def _lists(text: str) -> list[list[str]]:
    return [[c.strip().lower() for c in cols.split(",")] for cols in _INSERT.findall(text)]


async def _table_columns(conn: Conn) -> list[str]:
    cur = await conn.execute(
        "SELECT a.attname FROM pg_attribute a WHERE a.attrelid = 'collection_events'::regclass"
        " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum")
    return [str(r["attname"]) for r in await cur.fetchall()]


async def _function_sources(conn: Conn) -> dict[str, str]:
    cur = await conn.execute(
        "SELECT p.proname, p.prosrc FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = 'public'")
    return {str(r["proname"]): str(r["prosrc"]) for r in await cur.fetchall()}


async def test_event_columns_are_the_tables_writable_columns(conn: Conn) -> None:
    table = await _table_columns(conn)
    writable = [c for c in table if c not in GENERATED and c not in RECORD_ARGUMENTS]
    assert len(set(EVENT_COLUMNS)) == len(EVENT_COLUMNS)
    assert sorted(EVENT_COLUMNS) == sorted(writable)


def test_the_one_event_insert_writes_every_event_column() -> None:
    """insert_event calls bf4ps_event_record (migration 0023) naming each argument after its
    column, with the parameter of the same name."""
    text = q("insert_event")
    pairs = re.findall(r"(\w+)\s*=>\s*%\((\w+)\)s", text)
    assert all(arg == param for arg, param in pairs), pairs
    assert sorted(arg for arg, _ in pairs) == sorted([*EVENT_COLUMNS, *RECORD_ARGUMENTS])
    assert sorted(re.findall(r"%\((\w+)\)s", text)) == sorted(arg for arg, _ in pairs)


async def test_the_event_function_writes_every_event_column(conn: Conn) -> None:
    """bf4ps_event_record's arguments and its INSERT are the table's columns, by name."""
    cur = await conn.execute(
        "SELECT p.proargnames, p.prosrc FROM pg_proc p WHERE p.proname = 'bf4ps_event_record'")
    row = await cur.fetchone()
    assert row is not None
    assert sorted(row["proargnames"]) == sorted([*EVENT_COLUMNS, *RECORD_ARGUMENTS])
    [columns] = _lists(str(row["prosrc"]))
    assert sorted(columns) == sorted([*EVENT_COLUMNS, *RECORD_ARGUMENTS])


async def test_every_event_insert_names_columns_the_table_has(conn: Conn) -> None:
    table = set(await _table_columns(conn))
    sources = {f"query {name}": text for name, text in all_queries().items()}
    sources |= {f"function {name}()": text
                for name, text in (await _function_sources(conn)).items()}
    lists = {where: found for where, text in sources.items() if (found := _lists(text))}
    # the parse finds the statements it is meant to check (a regex that matches nothing
    # would pass vacuously)
    assert {"function bf4ps_event_record()", "function bf4ps_feed_class()",
            "function bf4ps_job_release()", "function bf4ps_reap_expired()",
            "function queue_claim()", "function queue_succeed()"} <= set(lists)
    problems = [f"{where}: {sorted(set(cols) - table)}"
                for where, found in lists.items() for cols in found if set(cols) - table]
    repeated = [f"{where}: {cols}" for where, found in lists.items() for cols in found
                if len(set(cols)) != len(cols)]
    assert not problems, f"columns collection_events does not have: {problems}"
    assert not repeated, f"a column named twice: {repeated}"
