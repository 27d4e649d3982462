"""Single-row statistics: a soldier's detailed stats (current + change history) and overview.

Both writers are one statement each (stats.sql `detailed_write`, `profile_write`) and open no
transaction of their own: inside finalize.succeed they are part of its fenced transaction.

No-backwards rule: a write whose fetched_at is not newer than the stored current row changes
nothing and writes no history (the newest fetch wins; of two equally new ones, the first
committed). Values are stored as Battlelog sent them: None stays NULL, never 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import NamedTuple

from psycopg.types.json import Jsonb

from bf4ps.battlelog.models import DetailedStats, ProfileStats
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, batch, one_row
from bf4ps.stats.progress_store import previous_detailed, record_detailed

PROFILE_LISTS = ("top_weapons", "top_vehicles", "progress", "linked_soldiers")
CLAN_TAG_MAX_LENGTH = 16  # profile_current's CHECK


@dataclass(frozen=True, slots=True)
class Written:
    """What one write changed (for tests, logs and metrics)."""

    current_rows: int = 0
    history_rows: int = 0
    catalog_inserted: int = 0
    catalog_refreshed: int = 0
    user_linked: bool = False
    outdated: bool = False  # nothing written: the stored data is as new or newer


class RowsWritten(NamedTuple):
    """What a current-and-history write touched."""

    current_written: int
    history_written: int


class _ProfileWritten(NamedTuple):
    current_written: int
    user_linked: int


async def write_detailed(conn: Conn, soldier_id: int, stats: DetailedStats,
                         fetched_at: datetime) -> Written:
    """Upsert detailed_stats_current; add a history row only when some value changed, and then
    the interval from the previous good snapshot (progress_store.py). The read of that snapshot
    goes in the write's pipeline: no extra round trip."""
    params = asdict(stats)
    params.update(soldier_id=soldier_id, fetched_at=fetched_at)
    previous = previous_detailed(soldier_id, fetched_at)
    write = Read(RowsWritten, "detailed_write", params)
    await batch(conn, previous, write)
    row = write.rows[0]
    current, history = row.current_written, row.history_written
    if history:
        await record_detailed(conn, soldier_id, previous.first, stats, fetched_at)
    return Written(current_rows=current, history_rows=history, outdated=current == 0)


def profile_params(soldier_id: int, profile: ProfileStats,
                   fetched_at: datetime) -> dict[str, object]:
    """Column values of profile_current: scalars as they are, the tuples as jsonb lists of
    objects (field name -> value). ValueError for a value the table cannot hold (a data error,
    raised before any statement runs, not a database outage to retry)."""
    if profile.clan_tag is not None and len(profile.clan_tag) > CLAN_TAG_MAX_LENGTH:
        raise ValueError(f"clan tag longer than {CLAN_TAG_MAX_LENGTH}: {profile.clan_tag[:40]!r}")
    params: dict[str, object] = {
        name: value for name, value in asdict(profile).items() if name not in PROFILE_LISTS}
    for name in PROFILE_LISTS:
        params[name] = Jsonb([asdict(item) for item in getattr(profile, name)])
    params.update(soldier_id=soldier_id, fetched_at=fetched_at)
    return params


async def write_profile(conn: Conn, soldier_id: int, profile: ProfileStats,
                        fetched_at: datetime) -> Written:
    """Upsert profile_current and record a known Battlelog user id on the soldier. Linked
    soldiers are stored in profile_current only; whether they become known soldiers is the
    scheduler's decision."""
    row = await one_row(conn, _ProfileWritten, "profile_write",
                        profile_params(soldier_id, profile, fetched_at))
    return Written(current_rows=row.current_written, user_linked=row.user_linked > 0,
                   outdated=row.current_written == 0)
