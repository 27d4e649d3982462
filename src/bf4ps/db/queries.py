"""Named SQL queries, loaded once from db/sql/*.sql (the procrastinate model), and the few ways
of running one (one, one_row, scalar, all_rows, batch, execute).

Each query starts with a header line `-- name: <query_name>`; the lines up to the next header are
its text, with psycopg's %(name)s parameters. A query named with `{item}` loads once per item
kind (ITEM_COLUMNS): `{item}` becomes the kind, `{counters}`, `{extras}`, `{stats}` (both),
`{seconds}` and `{arrays}` (typed array parameters) its columns, `{p.counters}` each qualified.
In any query `{detailed}` is DETAILED_COLUMNS (`{p.detailed}` qualified, `{%detailed}` as
parameters). Whole-line comments are dropped on loading: psycopg caches the parse of a query
text only up to 4 KiB, and the longest statements (the claim) are on the hot path.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, LiteralString, TypeVar

import psycopg
from psycopg import AsyncClientCursor
from psycopg.rows import dict_row

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    Row = TypeVar("Row", bound=DataclassInstance)
else:
    Row = TypeVar("Row")

Conn = psycopg.AsyncConnection[dict[str, Any]]  # what every query here runs on (dict rows)
_HEADER = re.compile(r"^-- name: ((?:[a-z_]|\{item\})(?:[a-z0-9_]|\{item\})*)\s*$", re.MULTILINE)
ITEM = "{item}"
# The item kinds, as their tables name them, with the columns of their stats tables: the
# counters (also kept in history), the extras (current row only) and the time used (a counter).
# Floats are float8.
ITEM_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "weapon": {"counters": ("kills", "headshots", "shots_fired", "shots_hit",
                            "time_equipped_seconds"),
               "extras": ("accuracy_fraction", "service_stars", "service_stars_progress"),
               "seconds": ("time_equipped_seconds",)},
    "vehicle": {"counters": ("kills", "time_in_seconds", "destroy_x_in_y"),
                "extras": ("service_stars", "service_stars_progress"),
                "seconds": ("time_in_seconds",)},
}
FLOAT_COLUMNS = frozenset({"accuracy_fraction", "service_stars_progress"})
# The detailed statistics' columns, in the order of detailed_stats_current and _history (and of
# battlelog.models.DetailedStats): written once for the queries that list them all.
DETAILED_COLUMNS = (
    "rank", "skill", "score", "total_score", "rank_score", "combat_score",
    "time_played_seconds", "kills", "deaths", "kill_assists", "headshots", "shots_fired",
    "shots_hit", "accuracy_percent", "longest_headshot", "highest_kill_streak", "nemesis_kills",
    "highest_nemesis_streak", "num_rounds", "wins", "losses", "score_per_minute",
    "kills_per_minute", "quit_percentage", "revives", "heals", "repairs", "resupplies",
    "avenger_kills", "savior_kills", "suppression_assists", "flags_captured", "flags_defended",
    "dogtags_taken", "vehicles_destroyed", "vehicle_damage", "assault_score", "engineer_score",
    "support_score", "recon_score", "commander_score", "squad_score", "vehicle_score",
    "award_score", "unlock_score", "assault_time_seconds", "engineer_time_seconds",
    "recon_time_seconds", "support_time_seconds", "commander_time_seconds", "conquest_score",
    "rush_score", "team_deathmatch_score", "squad_deathmatch_score", "domination_score",
    "obliteration_score", "defuse_score", "capture_the_flag_score", "air_superiority_score",
    "carrier_assault_score", "chain_link_score")
_DETAILED = re.compile(r"\{(?:(%)|(\w+)\.)?detailed\}")
_COLUMNS = re.compile(r"\{(?:(\w+)\.)?(counters|extras|stats|seconds|arrays)\}")
_COMMENT_LINE = re.compile(r"^[ \t]*--[^\n]*\n", re.MULTILINE)


def parse(text: str) -> dict[str, str]:
    parts = _HEADER.split(text)
    found: dict[str, str] = {}
    for header, body in zip(parts[1::2], parts[2::2], strict=True):
        text = _DETAILED.sub(_detailed, _COMMENT_LINE.sub("", body.strip() + "\n").strip())
        kinds = tuple(ITEM_COLUMNS) if ITEM in header else ("",)
        for kind in kinds:
            name = header.replace(ITEM, kind)
            if name in found:
                raise ValueError(f"query {name!r} defined twice")
            found[name] = _for_kind(text, kind) if kind else text
    return found


def _detailed(m: re.Match[str]) -> str:
    percent, prefix = m[1], m[2]
    return ", ".join(f"%({c})s" if percent else f"{prefix}.{c}" if prefix else c
                     for c in DETAILED_COLUMNS)


def _for_kind(text: str, kind: str) -> str:
    """A query written for both item kinds, as `kind`'s."""
    cols = ITEM_COLUMNS[kind]
    stats = cols["counters"] + cols["extras"]

    def columns(m: re.Match[str]) -> str:
        prefix, which = m[1], m[2]
        if which == "arrays":
            return ", ".join(f"%({c})s::{'float8' if c in FLOAT_COLUMNS else 'bigint'}[]"
                             for c in stats)
        names = stats if which == "stats" else cols[which]
        return ", ".join(f"{prefix}.{c}" if prefix else c for c in names)

    return _COLUMNS.sub(columns, text.replace(ITEM, kind))


@cache
def all_queries() -> dict[str, LiteralString]:
    loaded: dict[str, LiteralString] = {}
    folder = resources.files("bf4ps.db") / "sql"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        for name, text in parse(entry.read_text(encoding="utf-8")).items():
            if name in loaded:
                raise ValueError(f"query {name!r} defined in two files")
            loaded[name] = text  # packaged file text, never user input
    return loaded


def q(name: str) -> LiteralString:
    """The text of one named query (KeyError names the missing query)."""
    try:
        return all_queries()[name]
    except KeyError:
        raise KeyError(f"no SQL query named {name!r} in bf4ps/db/sql") from None


# Running a named query: the execute-and-fetch every caller would otherwise write again.

Params = Mapping[str, Any] | Sequence[Any] | None


async def one(conn: Conn, name: str, params: Params = None, *,
              prepare: bool | None = None) -> dict[str, Any] | None:
    """The first row of the named query, or None when it returns none."""
    return await (await conn.execute(q(name), params, prepare=prepare)).fetchone()


async def begin_then_one(conn: Conn, name: str, params: Params = None) -> dict[str, Any] | None:
    """BEGIN and the named query in one message (client-side binding, the simple protocol):
    the first row of the query, run first in a transaction the caller then ends."""
    cur = AsyncClientCursor(conn, row_factory=dict_row)
    await cur.execute("BEGIN;\n" + q(name), params)
    cur.nextset()  # past BEGIN's own result
    return await cur.fetchone()


async def one_then_commit(conn: Conn, name: str, params: Params = None) -> dict[str, Any] | None:
    """The first row of the named query, run as the last statement of the connection's open
    transaction, with the COMMIT in the same message (client-side binding, the simple
    protocol): no lock the query takes waits on a round trip to this client before the
    commit. An error in the query rolls the transaction back (the COMMIT is not run; the
    caller's ROLLBACK ends it)."""
    cur = AsyncClientCursor(conn, row_factory=dict_row)
    await cur.execute(q(name) + "\n;\nCOMMIT", params)
    return await cur.fetchone()


async def one_row(conn: Conn, name: str, params: Params = None, *,
                  prepare: bool | None = None) -> dict[str, Any]:
    """The row the named query always returns (an aggregate, a RETURNING of a row it made)."""
    row = await one(conn, name, params, prepare=prepare)
    if row is None:
        raise LookupError(f"query {name!r} returned no row")
    return row


async def scalar(conn: Conn, name: str, params: Params = None) -> Any:
    """The first column of the row the named query always returns."""
    return next(iter((await one_row(conn, name, params)).values()))


async def all_rows(conn: Conn, name: str, params: Params = None, *,
                   prepare: bool | None = None) -> list[dict[str, Any]]:
    return await (await conn.execute(q(name), params, prepare=prepare)).fetchall()


async def batch(conn: Conn, *calls: tuple[str, Params]) -> list[list[dict[str, Any]]]:
    """Independent named reads sent in one pipeline (one round trip and one wait for all of
    them, where one after the other costs a wait each); each one's rows, in order."""
    async with conn.pipeline():
        cursors = [await conn.execute(q(name), params) for name, params in calls]
    return [await cur.fetchall() for cur in cursors]


async def execute(conn: Conn, name: str, params: Params = None) -> int:
    """Run the named statement; the number of rows it touched."""
    return (await conn.execute(q(name), params)).rowcount


# Typed rows: a dataclass per row shape, filled from the dict row by field name (columns the
# dataclass does not name are left out, so a migration that adds one breaks no reader).


def as_row(cls: type[Row], row: Mapping[str, Any]) -> Row:
    """`row` as a `cls` (a dataclass): each field from the column of its name."""
    return cls(**{f.name: row[f.name] for f in dataclasses.fields(cls)})


async def one_as(conn: Conn, cls: type[Row], name: str, params: Params = None) -> Row | None:
    """The first row of the named query as a `cls`, or None when it returns none."""
    row = await one(conn, name, params)
    return None if row is None else as_row(cls, row)


async def one_row_as(conn: Conn, cls: type[Row], name: str, params: Params = None) -> Row:
    """The row the named query always returns, as a `cls`."""
    return as_row(cls, await one_row(conn, name, params))


async def all_as(conn: Conn, cls: type[Row], name: str, params: Params = None) -> list[Row]:
    return [as_row(cls, row) for row in await all_rows(conn, name, params)]
