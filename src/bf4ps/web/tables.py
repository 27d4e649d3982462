"""The soldier page's two big tables (some 170 weapons, 80 vehicles), rendered in Python from
one column list per item kind, heading and cells alike: a short string per cell instead of a
template expression keeps the page well under a millisecond of table work. Text is escaped
here; numbers are formatted, never raw input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Generic, TypeVar

from markupsafe import Markup

from bf4ps.views.progress import ItemProgress
from bf4ps.views.soldier_page import Vehicle, Weapon
from bf4ps.web.format import duration, number

PHONE_HIDDEN = " opt"  # a column a 390 px phone leaves out (style.css): name, kills, accuracy stay
RowT = TypeVar("RowT", Weapon, Vehicle)


def _num(value: float | int | None, digits: int = 0, unit: str = "", cls: str = "") -> str:
    """A numeric cell: the sort key and the shown value."""
    if value is None:
        return f'<td class="num{cls}" data-sort="0">–</td>'
    return f'<td class="num{cls}" data-sort="{value}">{number(value, digits)}{unit}</td>'


def _time(seconds: int | None, cls: str = "") -> str:
    return f'<td class="num{cls}" data-sort="{seconds or 0}">{duration(seconds)}</td>'


def _head(row: Weapon | Vehicle) -> str:
    return _head_of(row.name, row.category, row.sid)


@lru_cache(maxsize=2048)
def _head_of(name: str, category: str, sid: str) -> str:
    """A row's opening cells: the same few hundred catalog items on every page, escaped once."""
    name, category = escape(name), escape(category)
    return (f'<tr data-category="{category}"><td title="{escape(sid)}">{name}'
            f'<span class="cat-under">{category}</span></td><td class="opt">{category}</td>')


def _gain(g: ItemProgress | None) -> str:
    """Kills gained over the progress window (views/progress.py ITEM_WINDOW)."""
    if g is None:
        return '<td class="num gain-col muted" data-sort="0">–</td>'
    if g.resets and not g.kills:
        return '<td class="num gain-col reset" data-sort="0">reset</td>'
    return (f'<td class="num gain-col gain" data-sort="{g.kills}" title="{duration(g.seconds)} '
            f'played">+{number(g.kills)}</td>')


@dataclass(frozen=True, slots=True)
class Column(Generic[RowT]):
    """A numeric column after kills and the 7-day gain: its heading and its cell."""

    label: str
    cell: Callable[[RowT, str], str]  # the row and the cell's extra class
    opt: bool = True  # left out on a phone

    def th(self) -> str:
        return f'<th class="num{PHONE_HIDDEN if self.opt else ""}">{self.label}</th>'


@dataclass(frozen=True, slots=True)
class Rendered:
    """A table as soldier.html shows it."""

    key: str
    title: str
    count: int
    categories: list[str]
    head: Markup
    body: Markup


@dataclass(frozen=True, slots=True)
class ItemTable(Generic[RowT]):
    """One item kind's table: its words and its columns."""

    key: str  # "weapons": the table's id and filter
    title: str
    noun: str  # "Weapon": the first column's heading
    item_id: Callable[[RowT], int]
    columns: tuple[Column[RowT], ...]

    def head(self) -> Markup:
        return Markup(
            f'<tr><th>{self.noun}</th><th class="opt">Category</th><th class="num">Kills</th>'
            '<th class="num gain-col" title="kills gained over 7 days">7 d</th>'
            + "".join(c.th() for c in self.columns) + "</tr>")

    def render(self, rows: list[RowT], gains: dict[int, ItemProgress] | None = None
               ) -> Rendered:
        return Rendered(self.key, self.title, len(rows), sorted({r.category for r in rows}),
                        self.head(), self.rows(rows, gains))

    def rows(self, rows: list[RowT], gains: dict[int, ItemProgress] | None = None) -> Markup:
        got = gains or {}
        cells = [(c.cell, PHONE_HIDDEN if c.opt else "") for c in self.columns]
        return Markup("\n".join(  # every text field is escaped in _head
            _head(r) + _num(r.kills) + _gain(got.get(self.item_id(r)))
            + "".join(cell(r, cls) for cell, cls in cells) + "</tr>" for r in rows))


def _kpm(r: Weapon | Vehicle, cls: str) -> str:
    return _num(r.kpm, 2, cls=cls)


def _time_cell(r: Weapon | Vehicle, cls: str) -> str:
    return _time(r.time_seconds, cls)


def _stars(r: Weapon | Vehicle, cls: str) -> str:
    return _num(r.service_stars, cls=cls)


WEAPONS: ItemTable[Weapon] = ItemTable(
    "weapons", "Weapons", "Weapon", lambda w: w.weapon_id, (
    Column("KPM", _kpm),
    Column("Accuracy", lambda w, cls: _num(w.accuracy_percent, 1, " %", cls), opt=False),
    Column("Headshots", lambda w, cls: _num(w.headshots, cls=cls)),
    Column("HS %", lambda w, cls: _num(w.headshot_percent, 1, cls=cls)),
    Column("Time", _time_cell), Column("Stars", _stars)))
VEHICLES: ItemTable[Vehicle] = ItemTable(
    "vehicles", "Vehicles", "Vehicle", lambda v: v.vehicle_id, (
    Column("KPM", _kpm), Column("Destroyed", lambda v, cls: _num(v.destroyed, cls=cls)),
    Column("Time", _time_cell, opt=False), Column("Stars", _stars)))
