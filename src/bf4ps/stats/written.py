"""What a statistics write reports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Written:
    """What one write changed (for tests, logs and metrics)."""

    current_rows: int = 0
    history_rows: int = 0
    catalog_inserted: int = 0
    catalog_refreshed: int = 0
    user_linked: bool = False
    outdated: bool = False  # nothing written: the stored data is as new or newer
