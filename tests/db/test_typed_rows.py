"""Typed rows at the database boundary (bf4ps.db.queries): each read names its row type, and
each field is filled from the column of its name as the row is read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import pytest
from pydantic import BaseModel

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, Record, all_rows, batch, mapped, one, one_row, row_of


@dataclass(frozen=True)
class Pair:
    a: int
    b: str | None


class PairTuple(NamedTuple):
    a: int
    b: str | None


class PairModel(BaseModel):
    a: int
    b: str | None


@dataclass(frozen=True)
class WithDefault:
    a: int
    later: bool = True


async def rows_of(conn: Conn, cls: type, sql: str) -> list[object]:
    cur = conn.cursor(row_factory=row_of(cls))
    return await (await cur.execute(sql)).fetchall()  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [Pair, PairTuple, PairModel])
async def test_fields_come_from_the_columns_of_their_names(conn: Conn, cls: type) -> None:
    assert await rows_of(conn, cls, "SELECT 'x' AS b, 1 AS a") == [cls(a=1, b="x")]


async def test_a_column_the_type_does_not_name_is_left_out(conn: Conn) -> None:
    """A migration that adds a column breaks no reader of the row."""
    assert await rows_of(conn, Pair, "SELECT 1 AS a, NULL AS b, true AS added") == [
        Pair(1, None)]


async def test_a_missing_column_is_an_error_naming_it(conn: Conn) -> None:
    with pytest.raises(KeyError, match="'b'"):
        await rows_of(conn, Pair, "SELECT 1 AS a")


async def test_a_field_with_a_default_may_have_no_column(conn: Conn) -> None:
    assert await rows_of(conn, WithDefault, "SELECT 2 AS a") == [WithDefault(2)]
    assert await rows_of(conn, WithDefault, "SELECT 2 AS a, false AS later") == [
        WithDefault(2, later=False)]


async def test_a_class_that_is_no_row_type_is_refused(conn: Conn) -> None:
    with pytest.raises(TypeError, match="not a row type"):
        row_of(int)


class Now(NamedTuple):
    epoch: float


class Version(NamedTuple):
    server_version: str


async def test_named_reads_return_their_row_type(conn: Conn) -> None:
    now = await one_row(conn, Now, "clock_now")
    assert isinstance(now, Now) and now.epoch > datetime(2020, 1, 1).timestamp()
    version = await one(conn, Version, "server_version")
    assert version is not None and version.server_version[:2].isdigit()
    views = await all_rows(conn, Record, "catalog_views")
    assert views and all(isinstance(v, Record) and set(v) == {"name", "definition"}
                         for v in views)
    made = await one(conn, mapped(lambda r: (r["epoch"], len(r))), "clock_now")
    assert made is not None and made[1] == 1


async def test_a_batch_fills_each_read_with_its_own_rows(conn: Conn) -> None:
    now, version, none = (Read(Now, "clock_now"), Read(Version, "server_version"),
                          Read(Record, "search_canary", {"name": "nobody stored"}))
    with pytest.raises(RuntimeError, match="not been run"):
        _ = now.rows
    await batch(conn, now, version, none)
    assert isinstance(now.first, Now) and isinstance(version.rows[0], Version)
    assert none.rows == [] and none.first is None
