"""Numbered SQL migrations (db/migrations/NNNN_name.sql) applied under an advisory lock.

Each file runs in one transaction together with its bookkeeping row, so a failure leaves nothing
half-applied and is raised, never swallowed. An applied file whose text changed is an error.
The database's code (functions, triggers, views) is not in the migrations after the baseline:
it lives in hand-written files per room (bf4ps.db.code), re-applied here after the migrations,
inside the same lock, whenever a file changed.
The first file may be a baseline (NNNN_baseline.sql) that replaces the migrations up to its
number: a database that applied those is checked against their recorded checksums
(migrations/squashed.txt) instead; one that stopped before the baseline is refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import NamedTuple

import psycopg
from psycopg.rows import dict_row

from bf4ps.db import code
from bf4ps.db.queries import Conn, all_rows, one, one_row, q

MIGRATION_LOCK = 0x4246_3450_5344_4231  # "BF4PSDB1"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
BASELINE = "baseline"
_DECLARED = re.compile(r"^-- compatible-from: (\d{4})\s*$", re.MULTILINE)


def compatible_from(version: int, text: str) -> int:
    """The oldest build schema that works once migration `version` is applied: its
    `-- compatible-from: NNNN` line, else the schema just before it (bf4ps.db.compat)."""
    match = _DECLARED.search(text)
    return int(match[1]) if match else version - 1


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def compatible_from(self) -> int:
        return compatible_from(self.version, self.text)

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class Status:
    applied: list[tuple[int, str, datetime]]
    pending: list[Migration]
    server_version: str
    code_pending: list[str]  # code files whose text differs from the database's (db.code)


@dataclass(frozen=True)
class Upgraded:
    migrations: list[Migration]
    code: list[code.CodeFile]


class MigrationError(RuntimeError):
    pass


def available() -> list[Migration]:
    folder = resources.files("bf4ps.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            text = entry.read_text(encoding="utf-8")
            found.append(Migration(int(match[1]), match[2], text))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    base = baseline(found)
    first = base.version if base else 1
    if versions != list(range(first, first + len(found))):
        raise MigrationError(f"migration numbers must run without gaps from 1 or from a "
                             f"baseline: {versions}")
    return found


@cache
def squashed() -> dict[int, str]:
    """The checksums, by version, of the migrations the baseline replaces."""
    text = (resources.files("bf4ps.db") / "migrations" / "squashed.txt").read_text("utf-8")
    rows = (line.split() for line in text.splitlines() if line and not line.startswith("#"))
    return {int(name[:4]): checksum for name, checksum in rows}


def baseline(known: list[Migration]) -> Migration | None:
    return known[0] if known and known[0].name == BASELINE else None


@cache
def known_schema() -> int:
    """The schema this build knows: its newest migration."""
    return available()[-1].version


class Applied(NamedTuple):
    """A schema_migrations row."""

    version: int
    name: str
    checksum: str
    applied_at: datetime


class _Present(NamedTuple):
    present: bool


class _ServerVersion(NamedTuple):
    server_version: str


async def _applied(conn: Conn, *, read_only: bool = False) -> dict[int, Applied]:
    """The applied migrations; the table is made first unless `read_only` (`bf4ps db status`
    runs as the operator role, which may create nothing: a database never migrated has none)."""
    if read_only:
        if not (await one_row(conn, _Present, "migrations_table_exists")).present:
            return {}
    else:
        await conn.execute(q("create_migrations_table"))
    return {row.version: row for row in await all_rows(conn, Applied, "list_migrations")}


def _check_checksums(applied: dict[int, Applied], known: list[Migration],
                     *, newer_ok: bool = False) -> None:
    """`newer_ok`: migrations newer than this build's (a newer build upgraded the schema) are
    not an error here; whether this build may run on them is bf4ps.db.compat's question."""
    by_version = {m.version: m for m in known}
    newest = max(by_version, default=0)
    base = baseline(known)
    for version, row in applied.items():
        mig = by_version.get(version)
        expected = mig.checksum if mig else None
        if base and version <= base.version and row.checksum != expected:
            expected = squashed().get(version)  # applied before the squash
        if expected is None and newer_ok and version > newest:
            continue
        if expected is None:
            raise MigrationError(f"database has migration {version} that this code does not know")
        if row.checksum != expected:
            raise MigrationError(f"migration {version}_{row.name} changed after it was applied")
    if base and applied and max(applied) < base.version:
        raise MigrationError(
            f"the database is at migration {max(applied):04d}, before this build's baseline "
            f"{base.version:04d}, which replaces migrations 0001-{base.version:04d}: upgrade it "
            "first with a build that has them (docs/operations.md, The baseline)")


async def upgrade(url: str) -> list[Migration]:
    """Apply every pending migration and re-apply the changed code files; returns the
    migrations applied by this call."""
    return (await upgrade_all(url)).migrations


async def upgrade_all(url: str) -> Upgraded:
    """Apply every pending migration, then every code file that changed (bf4ps.db.code)."""
    known = available()
    done: list[Migration] = []
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row,
                                                     autocommit=True) as conn:
        await conn.execute(q("migration_session"))  # no lock or statement timeout here
        await conn.execute(q("migration_lock"), {"lock": MIGRATION_LOCK})
        try:
            applied = await _applied(conn)
            _check_checksums(applied, known)
            for mig in known:
                if mig.version in applied:
                    continue
                async with conn.transaction():
                    await conn.execute(mig.text)  # packaged migration file, never user input
                    await conn.execute(q("record_migration"), {
                        "version": mig.version, "name": mig.name, "checksum": mig.checksum})
                done.append(mig)
            applied_code = await code.apply(conn)
            await _record_compat(conn, known)
            await conn.execute(q("ensure_event_partitions"), {"months": 3})
            await conn.execute(q("no_temporary"))
        finally:
            await conn.execute(q("migration_unlock"), {"lock": MIGRATION_LOCK})
    return Upgraded(done, applied_code)


async def _record_compat(conn: Conn, known: list[Migration]) -> None:
    """Every known migration's compatibility floor, for older builds to read (bf4ps.db.compat)."""
    async with conn.transaction():
        for mig in known:
            await conn.execute(q("record_compat"), {"version": mig.version,
                                                    "compatible_from": mig.compatible_from})


async def status(url: str) -> Status:
    known = available()
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row,
                                                     autocommit=True) as conn:
        applied = await _applied(conn, read_only=True)
        _check_checksums(applied, known, newer_ok=True)
        row = await one(conn, _ServerVersion, "server_version")
        code_pending = code.changed(code.available(), await code.recorded(conn))
    rows = [(v, r.name, r.applied_at) for v, r in sorted(applied.items())]
    pending = [m for m in known if m.version not in applied]
    return Status(rows, pending, row.server_version if row else "?",
                  [f.name for f in code_pending])
