"""The rows the forecast's inputs are read from (db/sql/capacity.sql, `fleet_use` in
gates.sql), one dataclass per query, filled by field name (queries.as_row)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class CostRow:
    """`forecast_costs`: a resource's requests and finished attempts over the window."""

    resource: str
    requests: int = 0
    succeeded: int = 0
    failed: int = 0
    duration_ms: float | None = None  # mean of the successes; None: none


@dataclass(frozen=True)
class PopulationRow:
    """`forecast_population`: soldiers seen within the active window, 24 h, 7 d and 30 d, new
    within 7 d, play sessions ended within 24 h (all, and those with the policy's minimum
    play for a closing detailed snapshot and for weapons and vehicles)."""

    active: int
    d1: int
    d7: int
    d30: int
    new7: int
    sessions_d1: int = 0
    sessions_d1_min_play: int = 0
    sessions_d1_items_min_play: int = 0


@dataclass(frozen=True)
class EgressRow:
    """`forecast_egresses`: a gate and the background collectors serving behind it."""

    egress_key: str
    min_interval_seconds: float
    serving: int


@dataclass(frozen=True)
class SentRow:
    """`forecast_sent`: requests over the window and since when it has any (None: none)."""

    background: int
    interactive: int
    span_seconds: float | None


@dataclass(frozen=True)
class HistoryFirstRow:
    """`history_first_since`: the window's oldest fleet-history record."""

    recorded_at: datetime
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class BacklogRow:
    """`forecast_backlog`: never-attempted work of one activity class and resource."""

    activity_class: str
    resource: str
    n: int


@dataclass(frozen=True)
class QueuedRow:
    """`forecast_queued`: a class's background working set and its pending ranks (s from
    now)."""

    priority_class: str
    jobs: int
    first_s: float | None
    ranks_s: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class PassRow:
    """`forecast_pass_seconds`: the feeder's pass period as the queue shows it."""

    pass_s: float | None
    gaps: int
