"""The soldier page's two big tables (some 170 weapons, 80 vehicles), rendered in Python: one
f-string per row instead of a template expression per cell keeps the page well under a
millisecond of table work. Text is escaped here; numbers are formatted, never raw input."""

from __future__ import annotations

from html import escape
from typing import Any

from markupsafe import Markup

from bf4ps.web.format import duration, number


def _num(value: float | int | None, digits: int = 0, unit: str = "") -> str:
    """A numeric cell: the sort key and the shown value."""
    shown = number(value, digits)
    if value is not None and unit:
        shown += unit
    return f'<td class="num" data-sort="{value if value is not None else 0}">{shown}</td>'


def _time(seconds: int | None) -> str:
    return f'<td class="num" data-sort="{seconds or 0}">{duration(seconds)}</td>'


def _head(row: dict[str, Any]) -> str:
    name, category = escape(str(row["name"])), escape(str(row["category"]))
    return (f'<tr data-category="{category}"><td title="{escape(str(row["sid"]))}">{name}</td>'
            f"<td>{category}</td>")


def weapon_rows(rows: list[dict[str, Any]]) -> Markup:
    parts = []
    for w in rows:
        parts.append(
            _head(w) + _num(w["kills"]) + _num(w["kpm"], 2)
            + _num(w["accuracy_percent"], 1, " %") + _num(w["headshots"])
            + _num(w["headshot_percent"], 1) + _time(w["time_seconds"])
            + _num(w["service_stars"]) + "</tr>")
    return Markup("\n".join(parts))  # every text field is escaped above


def vehicle_rows(rows: list[dict[str, Any]]) -> Markup:
    parts = []
    for v in rows:
        parts.append(
            _head(v) + _num(v["kills"]) + _num(v["kpm"], 2) + _num(v["destroyed"])
            + _time(v["time_seconds"]) + _num(v["service_stars"]) + "</tr>")
    return Markup("\n".join(parts))  # every text field is escaped above
