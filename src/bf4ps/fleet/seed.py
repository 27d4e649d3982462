"""A collector's start and the fleet settings: its environment seeds what was never configured
(a new egress's pacing, a first fleet budget) and otherwise changes nothing; where a value it
was given explicitly differs from the database's, it says so once (one log line and a
settings_mismatch event) and uses the database's."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.fleet import conf as fleetconf
from bf4ps.fleet.conf import BudgetRow
from bf4ps.gates.gate import Gate
from bf4ps.queue.jobs import CollectorRef
from bf4ps.settings import Settings

log = logging.getLogger(__name__)

# setting -> (where the database keeps it, which row)
COMPARED = (("egress_min_interval_seconds", "min_interval_seconds", "gate"),
            ("egress_window_requests", "window_requests", "gate"),
            ("egress_window_seconds", "window_seconds", "gate"),
            ("fleet_budget_requests", "requests", "budget"),
            ("fleet_budget_window_seconds", "window_seconds", "budget"))


Number = int | float


@dataclass(frozen=True)
class GateSeed:
    """What a collector's settings make a new egress's gate with (bf4ps_gate_seed): the fleet's
    pacing from then on is the database's, changed by `bf4ps gate set`."""

    min_interval: float
    window_requests: int | None
    window_seconds: float | None  # a window's length counts only with its window

    @classmethod
    def of(cls, s: Settings) -> GateSeed:
        window = s.egress_window_requests
        return cls(s.egress_min_interval_seconds, window,
                   s.egress_window_seconds if window else None)


@dataclass(frozen=True)
class Difference:
    """A setting given to this host against the fleet's value of it (None: not set)."""

    local: Number | None
    fleet: Number | None


def differences(settings: Settings, gate: Gate, budget: BudgetRow) -> dict[str, Difference]:
    """The explicitly given settings (environment or file) whose value the fleet's differs
    from, by variable name. A window length counts only with its window (a count of
    requests)."""
    given = settings.model_fields_set
    rows: dict[str, Gate | BudgetRow] = {"gate": gate, "budget": budget}
    out: dict[str, Difference] = {}
    for name, column, which in COMPARED:
        local = getattr(settings, name)
        if name not in given or (name == "egress_window_seconds"
                                 and settings.egress_window_requests is None) \
                or (name == "fleet_budget_window_seconds"
                    and settings.fleet_budget_requests is None):
            continue
        fleet = getattr(rows[which], column)
        same = (local is None and fleet is None) or (
            local is not None and fleet is not None and abs(float(local) - float(fleet)) < 1e-9)
        if not same:
            out[f"BF4PS_{name.upper()}"] = Difference(local, fleet)
    return out


async def seed(conn: Conn, settings: Settings, me: CollectorRef) -> dict[str, Difference]:
    """Seed what is absent, compare the rest; the differences (already said)."""
    by = f"collector {me.name} (seeded from its settings)"
    async with conn.transaction():
        gate = await one(conn, Gate, "gate_seed", {
            "egress_key": me.egress_key, **asdict(GateSeed.of(settings)),
            "reason": f"{by}: first collector on this egress"})
        if gate is None:
            gate = await fleetconf.gate(conn, me.egress_key)
        if settings.fleet_budget_requests is not None:
            await one(conn, BudgetRow, "budget_seed", {
                "requests": settings.fleet_budget_requests,
                "window_seconds": settings.fleet_budget_window_seconds,
                "reason": f"{by}: no fleet budget was ever configured"})
        budget = await one(conn, BudgetRow, "budget_get")
        assert gate is not None and budget is not None
        diffs = differences(settings, gate, budget)
        if diffs:
            await events.record(conn, EventType.SETTINGS_MISMATCH, **me.event_fields(),
                                lane=me.lane.value, details={"differences": {
                                    k: asdict(d) for k, d in diffs.items()}})
    if gate.min_interval_seconds <= settings.clock_skew_limit_seconds:
        log.warning("collector %s: BF4PS_CLOCK_SKEW_LIMIT_SECONDS (%g) is not below egress %s's "
                    "interval (%g s): a clock corrected between two checks could move a send "
                    "by more than a whole interval; lower the bound", me.name,
                    settings.clock_skew_limit_seconds, me.egress_key,
                    gate.min_interval_seconds)
    if diffs:
        log.warning("collector %s: its settings differ from the fleet's, which it uses instead "
                    "(`bf4ps gate set` / `bf4ps budget set` change the fleet's; remove these "
                    "from this host's environment): %s", me.name, "; ".join(
                        f"{k} {d.local} (fleet: {d.fleet})" for k, d in diffs.items()))
    return diffs
