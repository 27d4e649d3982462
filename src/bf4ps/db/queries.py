"""Named SQL queries, loaded once from db/sql/*.sql (the procrastinate model), and the few ways
of running one (one, one_row, scalar, all_rows, batch, execute), each read's rows typed.

Each query starts with a header line `-- name: <query_name>`; the lines up to the next header are
its text, with psycopg's %(name)s parameters. A query named with `{item}` loads once per item
kind (ITEM_COLUMNS): `{item}` becomes the kind, `{counters}`, `{extras}`, `{stats}` (both),
`{seconds}` and `{arrays}` (typed array parameters) its columns, `{p.counters}` each qualified;
one named with `{board}` once per leaderboard (BOARDS). In any query `{detailed}` is
DETAILED_COLUMNS (`{p.detailed}` qualified, `{%detailed}` as parameters). Whole-line comments
are dropped on loading: psycopg caches the parse of a query text only up to 4 KiB, and the
longest statements (the claim) are on the hot path.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Generic, LiteralString, TypeAlias, TypeVar, cast

import psycopg
from psycopg.pq import ExecStatus
from psycopg.rows import BaseRowFactory, RowMaker, no_result

if TYPE_CHECKING:
    from psycopg._cursor_base import BaseCursor

Conn = psycopg.AsyncConnection[dict[str, Any]]  # what every query here runs on (dict rows)
_VARIANT = r"\{(?:item|board)\}"
_HEADER = re.compile(rf"^-- name: ((?:[a-z_]|{_VARIANT})(?:[a-z0-9_]|{_VARIANT})*)\s*$",
                     re.MULTILINE)
ITEM = "{item}"
BOARD = "{board}"
# The leaderboards (stats/discovery.py Board): a query named with `{board}` loads once per board,
# `{order}` its partial index's sort key and `{where}` what that index's predicate adds to the
# predicate the boards share (db/schema.sql), so each board's text is planned on its index.
BOARDS: dict[str, dict[str, str]] = {
    "spm": {"order": "d.score_per_minute", "where": ""},
    "kd": {"order": "(d.kills::double precision / d.deaths)", "where": " AND d.deaths > 0"},
    "skill": {"order": "d.skill", "where": ""},
    "kills": {"order": "d.kills", "where": ""},
}
_BOARD_PARTS = re.compile(r"\{(order|where)\}")
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
        for name, variant in _variants(header, text):
            if name in found:
                raise ValueError(f"query {name!r} defined twice")
            found[name] = variant
    return found


def _variants(header: str, text: str) -> list[tuple[str, str]]:
    """A query's name and text, or one of each per item kind or board its header names."""
    if ITEM in header:
        return [(header.replace(ITEM, kind), _for_kind(text, kind)) for kind in ITEM_COLUMNS]
    if BOARD in header:
        return [(header.replace(BOARD, board), _for_board(text, board)) for board in BOARDS]
    return [(header, text)]


def _detailed(m: re.Match[str]) -> str:
    percent, prefix = m[1], m[2]
    return ", ".join(f"%({c})s" if percent else f"{prefix}.{c}" if prefix else c
                     for c in DETAILED_COLUMNS)


def _for_board(text: str, board: str) -> str:
    """A query written for every leaderboard, as `board`'s."""
    parts = BOARDS[board]
    return _BOARD_PARTS.sub(lambda m: parts[m[1]], text)


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


# Running a named query: the execute-and-fetch every caller would otherwise write again. Each
# read names the type of its rows (a dataclass, a NamedTuple or a pydantic model, or else a
# psycopg row factory that builds them): each field is filled from the column of its name as
# the row is read (columns the type does not name are left out, so a migration that adds one
# breaks no reader; a field with a default may have no column). A caller that wants the
# columns as they come (a row copied to JSON) names Record.

Params = Mapping[str, Any] | Sequence[Any] | None
R = TypeVar("R")
RowType: TypeAlias = type[R] | BaseRowFactory[R]  # what a read's rows are made as


class Record(dict[str, object]):
    """A row as its column mapping, for a caller that copies columns through unread (JSON,
    templates, a diagnostic listing): the deliberate untyped choice."""


@dataclasses.dataclass(frozen=True, slots=True)
class Present:
    """A row whose columns the caller does not read: only whether the query returned one."""


_FIELDS: dict[type[Any], tuple[tuple[str, ...], frozenset[str]]] = {}


def _fields(cls: type[Any]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The fields a row type is filled by, and those of them that may be left to a default."""
    if cls not in _FIELDS:
        _FIELDS[cls] = _fields_of(cls)
    return _FIELDS[cls]


def _fields_of(cls: type[Any]) -> tuple[tuple[str, ...], frozenset[str]]:
    if dataclasses.is_dataclass(cls):
        found = [f for f in dataclasses.fields(cls) if f.init]
        return (tuple(f.name for f in found),
                frozenset(f.name for f in found if f.default is not dataclasses.MISSING
                          or f.default_factory is not dataclasses.MISSING))
    model_fields: dict[str, Any] | None = getattr(cls, "model_fields", None)
    if model_fields is not None:  # a pydantic model
        return (tuple(model_fields),
                frozenset(n for n, f in model_fields.items() if not f.is_required()))
    names: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if names is None:
        raise TypeError(f"{cls.__name__} is not a row type (a dataclass, a NamedTuple or a "
                        "pydantic model)")
    defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
    return names, frozenset(defaults)


_TUPLES = frozenset({ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK})


def column_names(cursor: BaseCursor[Any, Any]) -> list[str] | None:
    """The current result's column names, None when it returns no rows (as psycopg's
    `description` says), read from the result itself: `description` makes a Column object of
    every column each time it is read, some 440 for a soldier page."""
    res = cursor.pgresult
    if res is None or not (res.nfields or res.status in _TUPLES):
        return None
    encoding = cursor.connection.info.encoding
    return [(res.fname(i) or b"").decode(encoding) for i in range(res.nfields)]


def row_of(cls: RowType[R]) -> BaseRowFactory[R]:
    """psycopg's row factory for `cls`: each row as a `cls`, from the columns its fields name
    (a row factory given instead, for a row built some other way, is used as it is)."""
    if not isinstance(cls, type):
        return cls
    if cls is Record:
        return cast("BaseRowFactory[R]", _record_row)
    names, optional = _fields(cls)

    def factory(cursor: BaseCursor[Any, Any]) -> RowMaker[R]:
        found = column_names(cursor)
        if found is None:
            return no_result
        columns = {name: i for i, name in enumerate(found)}
        missing = [n for n in names if n not in columns and n not in optional]
        if missing:
            raise KeyError(f"{cls.__name__}: the query returns no column {missing[0]!r}")
        pick = [(n, columns[n]) for n in names if n in columns]
        return lambda values: cls(**{n: values[i] for n, i in pick})

    return factory


def mapped(make: Callable[[Mapping[str, Any]], R]) -> BaseRowFactory[R]:
    """A row factory for rows a function builds from the row's column mapping (a value
    that nests others, a column parsed on the way)."""

    def factory(cursor: BaseCursor[Any, Any]) -> RowMaker[R]:
        names = column_names(cursor)
        if names is None:
            return no_result
        return lambda values: make(dict(zip(names, values, strict=True)))

    return factory


def _record_row(cursor: BaseCursor[Any, Any]) -> RowMaker[Record]:
    names = column_names(cursor)
    if names is None:
        return no_result
    return lambda values: Record(zip(names, values, strict=True))


async def one(conn: Conn, cls: RowType[R], name: str, params: Params = None, *,
              prepare: bool | None = None) -> R | None:
    """The first row of the named query as a `cls`, or None when it returns none."""
    cur = conn.cursor(row_factory=row_of(cls))
    return await (await cur.execute(q(name), params, prepare=prepare)).fetchone()


async def begin_then_one(conn: Conn, cls: RowType[R], name: str, params: Params = None) -> R | None:
    """BEGIN and the named query in one message (a pipeline: one Sync, one round trip; the
    query a prepared statement like any other): the first row of the query, run first in a
    transaction the caller then ends."""
    async with conn.pipeline():
        await conn.execute("BEGIN")
        cur = await conn.cursor(row_factory=row_of(cls)).execute(q(name), params)
    return await cur.fetchone()


async def one_then_commit(conn: Conn, cls: RowType[R], name: str,
                          params: Params = None) -> R | None:
    """The first row of the named query, run as the last statement of the connection's open
    transaction, with the COMMIT in the same message (a pipeline: one Sync, one round trip;
    the query a prepared statement like any other): no lock the query takes waits on a round
    trip to this client before the commit. An error in the query rolls the transaction back
    (the pipeline skips the COMMIT; the caller's ROLLBACK ends it)."""
    async with conn.pipeline():
        cur = await conn.cursor(row_factory=row_of(cls)).execute(q(name), params)
        await conn.execute("COMMIT")
    return await cur.fetchone()


async def one_row(conn: Conn, cls: RowType[R], name: str, params: Params = None, *,
                  prepare: bool | None = None) -> R:
    """The row the named query always returns (an aggregate, a RETURNING of a row it made)."""
    row = await one(conn, cls, name, params, prepare=prepare)
    if row is None:
        raise LookupError(f"query {name!r} returned no row")
    return row


async def scalar(conn: Conn, name: str, params: Params = None) -> Any:
    """The first column of the row the named query always returns."""
    row = await (await conn.execute(q(name), params)).fetchone()
    if row is None:
        raise LookupError(f"query {name!r} returned no row")
    return next(iter(row.values()))


async def all_rows(conn: Conn, cls: RowType[R], name: str, params: Params = None, *,
                   prepare: bool | None = None) -> list[R]:
    """Every row of the named query as a `cls`."""
    cur = conn.cursor(row_factory=row_of(cls))
    return await (await cur.execute(q(name), params, prepare=prepare)).fetchall()


class Read(Generic[R]):
    """One named read for `batch`: its rows (as `cls`) once the batch has run."""

    __slots__ = ("_rows", "cls", "name", "params")

    def __init__(self, cls: RowType[R], name: str, params: Params = None) -> None:
        self.cls, self.name, self.params = cls, name, params
        self._rows: list[R] | None = None

    @property
    def rows(self) -> list[R]:
        if self._rows is None:
            raise RuntimeError(f"read {self.name!r} has not been run (queries.batch)")
        return self._rows

    @property
    def first(self) -> R | None:
        return self.rows[0] if self.rows else None


async def batch(conn: Conn, *reads: Read[Any]) -> None:
    """Independent named reads sent in one pipeline (one round trip and one wait for all of
    them, where one after the other costs a wait each); each read's rows are then its `rows`."""
    async with conn.pipeline():
        cursors = [await conn.cursor(row_factory=row_of(r.cls)).execute(q(r.name), r.params)
                   for r in reads]
    for read, cur in zip(reads, cursors, strict=True):
        read._rows = await cur.fetchall()


async def execute(conn: Conn, name: str, params: Params = None) -> int:
    """Run the named statement; the number of rows it touched."""
    return (await conn.execute(q(name), params)).rowcount
