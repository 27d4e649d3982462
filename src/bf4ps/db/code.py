"""The database's code — every function, trigger and view — as hand-written source files, one
per room (db/functions/ROOM.sql), beside the numbered migrations (tables, indexes, data).

`bf4ps db upgrade` re-applies, after the migrations and inside their advisory lock, every file
whose checksum differs from the one the database recorded (table `schema_code`), as Flyway's
repeatable migrations do: all changed files in one transaction, in name order, so an upgrade
puts in the whole of a build's code or none of it. A file is written to run again: CREATE OR
REPLACE, grants after each object. A signature an older build still running during an upgrade
needs is kept; the new one gets a versioned name (docs/architecture.md, The database's code).
`db/schema.sql` stays generated from an upgraded database, the parity check.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import NamedTuple

from bf4ps.db.queries import Conn, all_rows, one_row, q


@dataclass(frozen=True)
class CodeFile:
    name: str  # ROOM.sql
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


class Recorded(NamedTuple):
    """A schema_code row."""

    file: str
    checksum: str
    applied_at: datetime


class _Present(NamedTuple):
    present: bool


def available() -> list[CodeFile]:
    """The packaged code files, in the order they are applied (by name)."""
    folder = resources.files("bf4ps.db") / "functions"
    found = [CodeFile(entry.name, entry.read_text(encoding="utf-8"))
             for entry in folder.iterdir() if entry.name.endswith(".sql")]
    return sorted(found, key=lambda f: f.name)


async def recorded(conn: Conn) -> dict[str, Recorded]:
    """The files as the database last applied them (none where never applied, or where the
    schema predates their record: migration 0033)."""
    if not (await one_row(conn, _Present, "code_table_exists")).present:
        return {}
    return {row.file: row for row in await all_rows(conn, Recorded, "list_code")}


def changed(files: list[CodeFile], applied: dict[str, Recorded]) -> list[CodeFile]:
    """The files whose text differs from the one recorded (or that were never applied)."""
    return [f for f in files
            if f.name not in applied or applied[f.name].checksum != f.checksum]


async def apply(conn: Conn, files: list[CodeFile] | None = None) -> list[CodeFile]:
    """Re-apply every code file (the packaged ones unless `files`) whose text changed since
    the database last applied it, in one transaction; the caller holds the migration lock.
    Returns the files applied."""
    files = available() if files is None else files
    todo = changed(files, await recorded(conn))
    if not todo:
        return []
    async with conn.transaction():
        await conn.execute(q("code_session"))
        for f in todo:
            await conn.execute(f.text)  # packaged code file, never user input
            await conn.execute(q("record_code"), {"file": f.name, "checksum": f.checksum})
        await conn.execute(q("forget_code"), {"files": [f.name for f in files]})
    return todo
