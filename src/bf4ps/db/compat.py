"""Which builds may run against which schema (expand/contract, one version of overlap).

A build knows migrations 1..K ("schema K") and works with a database at schema V when V == K,
or V > K and every migration above K declares it compatible with builds of schema K
(`-- compatible-from: NNNN`, read by bf4ps.db.migrate; without the line a migration is an
*expand* step, compatible with the schema just before it; a *contract* step declares its own
number, refusing older builds). V < K is refused: run `bf4ps db upgrade`, which records the
declarations in schema_compat so an older build, lacking the newer files, can read them. Every
long-running process checks at start and names its sessions (application_name: build, schema,
command) so that `bf4ps db status` can list what is connected and whether each can work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from bf4ps import __version__
from bf4ps.db.connect import connection
from bf4ps.db.migrate import known_schema
from bf4ps.db.queries import Conn, all_rows

_APPLICATION = re.compile(r"^bf4ps/(\S+) schema=(\d+)(?: (.*))?$")

__all__ = ["IncompatibleSchema", "SchemaState", "application_name", "known_schema",
           "parse_application", "require", "state"]


class IncompatibleSchema(RuntimeError):
    pass


def application_name(command: str = "") -> str:
    """`bf4ps/<build> schema=<K> <command>`, within PostgreSQL's 63 characters (the CLI
    passes the command it runs, bf4ps.cli.common.session_name)."""
    return f"bf4ps/{__version__} schema={known_schema()} {command}".strip()[:63]


@dataclass(frozen=True)
class SchemaState:
    version: int  # the newest applied migration
    floors: dict[int, int]  # applied migration -> the oldest build schema it works with

    def problem(self, build_schema: int, build: str = __version__) -> str | None:
        """Why a build of `build_schema` cannot work with this schema (None: it can)."""
        if self.version < build_schema:
            return (f"the database's schema is at {self.version:04d} and bf4ps {build} needs "
                    f"{build_schema:04d}: run `bf4ps db upgrade` first")
        newer = {v: f for v, f in self.floors.items() if v > build_schema}
        refusing = sorted(v for v, floor in newer.items() if floor > build_schema)
        if refusing:
            first = refusing[0]
            return (f"the database's schema is at {self.version:04d}, which bf4ps {build} "
                    f"(schema {build_schema:04d}) cannot use: migration {first:04d} works with "
                    f"builds of schema {newer[first]:04d} or later; upgrade this host's "
                    "bf4ps (docs/operations.md, Upgrades)")
        return None


class _Compat(NamedTuple):
    version: int
    compatible_from: int | None


async def state(conn: Conn) -> SchemaState:
    rows = await all_rows(conn, _Compat, "schema_compat_state")
    floors = {r.version: r.version - 1 if r.compatible_from is None else r.compatible_from
              for r in rows}
    return SchemaState(max(floors, default=0), floors)


async def require(url: str) -> None:
    """Refuse to start (IncompatibleSchema, with the reason) unless this build can work with
    the database's schema."""
    async with connection(url) as conn:
        problem = (await state(conn)).problem(known_schema())
    if problem:
        raise IncompatibleSchema(problem)


def parse_application(name: str) -> tuple[str, int, str] | None:
    """(build, schema, command) of a BF4PS session's application_name."""
    match = _APPLICATION.match(name)
    return (match[1], int(match[2]), match[3] or "") if match else None
