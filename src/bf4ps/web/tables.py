"""The soldier page's two big tables (some 170 weapons, 80 vehicles), rendered in Python: one
f-string per row instead of a template expression per cell keeps the page well under a
millisecond of table work. Text is escaped here; numbers are formatted, never raw input."""

from __future__ import annotations

from html import escape

from markupsafe import Markup

from bf4ps.views.progress import ItemProgress
from bf4ps.views.soldier_page import Vehicle, Weapon
from bf4ps.web.format import duration, number

PHONE_HIDDEN = " opt"  # a column a 390 px phone leaves out (style.css): name, kills, accuracy stay


def _num(value: float | int | None, digits: int = 0, unit: str = "", cls: str = "") -> str:
    """A numeric cell: the sort key and the shown value."""
    shown = number(value, digits)
    if value is not None and unit:
        shown += unit
    return f'<td class="num{cls}" data-sort="{value if value is not None else 0}">{shown}</td>'


def _time(seconds: int | None, cls: str = "") -> str:
    return f'<td class="num{cls}" data-sort="{seconds or 0}">{duration(seconds)}</td>'


def _head(row: Weapon | Vehicle) -> str:
    name, category = escape(row.name), escape(row.category)
    return (f'<tr data-category="{category}"><td title="{escape(row.sid)}">{name}'
            f'<span class="cat-under">{category}</span></td><td class="opt">{category}</td>')


def _gain(g: ItemProgress | None) -> str:
    """Kills gained over the progress window (views/progress.py ITEM_WINDOW)."""
    if g is None:
        return '<td class="num gain-col muted" data-sort="0">–</td>'
    if g.resets and not g.kills:
        return '<td class="num gain-col reset" data-sort="0">reset</td>'
    return (f'<td class="num gain-col gain" data-sort="{g.kills}" title="{duration(g.seconds)} '
            f'played">+{number(g.kills)}</td>')


def weapon_rows(rows: list[Weapon], gains: dict[int, ItemProgress] | None = None) -> Markup:
    parts = []
    got = gains or {}
    for w in rows:
        parts.append(
            _head(w) + _num(w.kills) + _gain(got.get(w.weapon_id))
            + _num(w.kpm, 2, cls=PHONE_HIDDEN)
            + _num(w.accuracy_percent, 1, " %") + _num(w.headshots, cls=PHONE_HIDDEN)
            + _num(w.headshot_percent, 1, cls=PHONE_HIDDEN)
            + _time(w.time_seconds, PHONE_HIDDEN)
            + _num(w.service_stars, cls=PHONE_HIDDEN) + "</tr>")
    return Markup("\n".join(parts))  # every text field is escaped above


def vehicle_rows(rows: list[Vehicle], gains: dict[int, ItemProgress] | None = None) -> Markup:
    parts = []
    got = gains or {}
    for v in rows:
        parts.append(
            _head(v) + _num(v.kills) + _gain(got.get(v.vehicle_id))
            + _num(v.kpm, 2, cls=PHONE_HIDDEN)
            + _num(v.destroyed, cls=PHONE_HIDDEN) + _time(v.time_seconds)
            + _num(v.service_stars, cls=PHONE_HIDDEN) + "</tr>")
    return Markup("\n".join(parts))  # every text field is escaped above
