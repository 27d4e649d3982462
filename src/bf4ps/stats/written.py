"""What a statistics write reports, and the one-row statement helper the writers share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q


@dataclass(frozen=True, slots=True)
class Written:
    """What one write changed (for tests, logs and metrics)."""

    current_rows: int = 0
    history_rows: int = 0
    catalog_inserted: int = 0
    catalog_refreshed: int = 0
    user_linked: bool = False
    outdated: bool = False  # nothing written: the stored data is as new or newer


async def one_row(conn: Conn, query: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run the named query and return its single result row."""
    cur = await conn.execute(q(query), params)
    row = await cur.fetchone()
    assert row is not None, f"{query} returned no row"
    return row
