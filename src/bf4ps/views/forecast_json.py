"""The shape of `bf4ps forecast --json` (views/forecast_report.py `as_json`) and of
`--backtest --json` (views/backtest.py): one typed dict per object, the keys as they are
printed."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict


class FigureJson(TypedDict):
    value: float
    source: str
    measured: bool


class CostJson(TypedDict):
    requests_per_attempt: FigureJson | None
    success_share: FigureJson | None
    duration_seconds: FigureJson | None
    requests_per_collection: float


class EgressJson(TypedDict):
    key: str
    min_interval_seconds: float
    serving: int


class PopulationJson(TypedDict):
    total: FigureJson | None
    active: FigureJson | None
    seen: dict[str, FigureJson | None]  # seconds -> soldiers seen within them
    new_per_day: FigureJson | None


class InputsJson(TypedDict):
    costs: dict[str, CostJson]
    egresses: list[EgressJson]
    egress_source: str
    budget_per_hour: FigureJson | None
    population: PopulationJson
    bootstrap_rate: dict[str, FigureJson | None]
    fleet_rate: FigureJson | None
    interactive_per_hour: FigureJson | None
    policy: dict[str, float]  # the policy keys the model reads


class CapacityJson(TypedDict):
    pacing_per_hour: float
    budget_per_hour: float | None
    measured_per_hour: float | None
    per_hour: float
    active_cap_per_hour: float
    binding: str
    serving: int


# "class" is a keyword: these two are declared the functional way
DemandJson = TypedDict("DemandJson", {
    "class": str, "resource": str, "reason": str, "collections_per_hour": float,
    "requests_per_hour": float, "note": str})
ServedJson = TypedDict("ServedJson", {
    "class": str, "resource": str, "now_per_hour": float, "steady_per_hour": float})


class CompletionJson(TypedDict):
    resource: str
    remaining: int
    collections_per_hour: float
    completes_at: datetime | None
    source: str
    marks: dict[str, datetime | None]  # "0.1", "0.25", ... -> when


class AgeJson(TypedDict):
    seconds: float | None
    growth_per_hour: float
    unmet: bool


class ForecastJson(TypedDict):
    at: datetime
    window_seconds: float
    fits: bool
    binding: str
    demand_per_hour: float
    active_per_hour: float
    shortfall_per_hour: float
    throughput_per_hour: float
    steady_throughput_per_hour: float
    capacity: CapacityJson
    demand: list[DemandJson]
    served: list[ServedJson]
    bootstrap: list[CompletionJson]
    backlog_age: dict[str, AgeJson]
    egresses_needed: int | None
    budget_needed_per_hour: float | None
    suggestion: str | None
    suggested_policy: dict[str, float]
    missing: list[str]
    inputs: InputsJson


class BacktestJson(TypedDict):
    since: datetime
    horizon_seconds: float
    records: int
    errors: dict[str, dict[str, float]]  # figure -> {"error", "abs", "n"}
