"""Display helpers (Jinja filters): BF4 item and category names, numbers,
durations and ages."""

from __future__ import annotations

from datetime import UTC, datetime

from bf4ps.views.soldier import category_name, item_name


def number(value: float | int | None, digits: int = 0) -> str:
    """Grouped with narrow no-break spaces: 1 234 567."""
    if value is None:
        return "–"
    if digits:
        text = f"{value:,.{digits}f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = f"{value:,.0f}"
    return text.replace(",", "\u202f") if "," in text else text


def duration(seconds: float | int | None) -> str:
    if seconds is None:
        return "–"
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    hours, minutes = divmod(s // 60, 60)
    if hours >= 100:
        return f"{hours:,} h".replace(",", "\u202f")
    return f"{hours} h {minutes:02d} min"


def ago(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "never"
    delta = ((now or datetime.now(UTC)) - when).total_seconds()
    if delta < 0:
        return "in " + duration(-delta)
    if delta < 90:
        return f"{int(delta)} sec ago"
    if delta < 5400:
        return f"{int(delta // 60)} min ago"
    if delta < 2 * 86400:
        return f"{int(delta // 3600)} h ago"
    return f"{int(delta // 86400)} days ago"


def stamp(when: datetime | None) -> str:
    if when is None:
        return "–"
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(when: datetime | None) -> str:
    return when.isoformat() if when is not None else ""


FILTERS = {"item_name": item_name, "category_name": category_name, "number": number,
           "duration": duration, "ago": ago, "stamp": stamp, "iso": iso}
