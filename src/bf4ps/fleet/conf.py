"""Fleet settings have one source of truth, the database: egress pacing (egress_gates), the
fleet budget (fleet_budget) and its class shares (the budget_* keys of the policy table). They
are changed here, by operator commands (`bf4ps gate set`, `bf4ps budget set|remove`) through
the audited functions bf4ps_gate_set and bf4ps_budget_set (db/schema.sql): the database's
audit trigger writes each change's row (fleet_settings_changes: the database role that made it
as session_user, old -> new, why; never pruned) and its fleet_settings_changed event, in the
change's transaction, whoever changed it and how. A collector's environment only seeds what
was never configured (seed.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, one, one_row, q
from bf4ps.gates.gate import Gate
from bf4ps.settings import setting_default

# `--share CLASS=F`: the active class has a cap, the others a floor, stored as these policy
# keys, which the admission reads itself (budget_shares() in db/functions/budget.sql;
# docs/architecture.md "Rate gates and the fleet budget")
SHARES = {"active": "budget_cap_active", "interactive": "budget_floor_interactive",
          "bootstrap": "budget_floor_bootstrap", "retry": "budget_floor_retry"}
FLOORS = ("interactive", "bootstrap", "retry")


class FleetConfError(ValueError):
    """A change refused; the message says why and what to do."""


@dataclass(frozen=True)
class GateChange:
    interval: float | None = None
    window_requests: int | None = None
    window_seconds: float | None = None
    no_window: bool = False
    cooldown_seconds: float | None = None  # cool the egress down this long from now
    end_cooldown: bool = False  # end a cool-down and reset the throttle streak


@dataclass(frozen=True)
class ListedGate(Gate):
    """A gate as `bf4ps gate list` shows it: cooling down now, and its current collectors."""

    cooling_down: bool
    collectors: list[str] | None


@dataclass(frozen=True)
class BudgetRow:
    """The fleet budget's single row (fleet_budget): requests None is no budget."""

    budget_id: int
    requests: int | None
    window_seconds: float
    updated_at: datetime
    configured_at: datetime | None
    updated_by: str | None


@dataclass(frozen=True)
class SettingsChange:
    """One audited change of a fleet setting (fleet_settings_changes)."""

    change_id: int
    changed_at: datetime
    setting: str
    subject: str
    old_value: dict[str, Any] | None  # the setting's JSON before and after
    new_value: dict[str, Any] | None
    changed_by: str
    reason: str | None


@dataclass(frozen=True)
class Budget:
    """The fleet budget as `bf4ps budget show` reports it: its row, its use in the current
    window, the class shares, and its latest changes."""

    requests: int | None
    window_seconds: float
    configured_at: datetime | None
    updated_by: str | None
    updated_at: datetime
    used: int
    shares: dict[str, float]
    changes: list[SettingsChange]


def shares_of(pol: policy_mod.Policy) -> dict[str, float]:
    return {cls: float(getattr(pol, key)) for cls, key in SHARES.items()}


async def give_reason(conn: Conn, reason: str | None) -> None:
    """The reason the audit trigger records for the transaction's changes of policy keys."""
    await conn.execute(q("settings_reason"), {"reason": reason or ""})


def _window(change: GateChange, old: Gate | None) -> tuple[int | None, float | None]:
    if change.no_window:
        return None, None
    requests = change.window_requests if change.window_requests is not None else (
        old.window_requests if old else None)
    seconds = change.window_seconds if change.window_seconds is not None else (
        old.window_seconds if old else None)
    if requests is None:
        if change.window_seconds is not None:
            raise FleetConfError("--window-seconds needs a window: give --window-requests N")
        return None, None
    if seconds is None:
        seconds = setting_default("egress_window_seconds")
    return requests, seconds


async def set_gate(conn: Conn, egress: str, change: GateChange, *, reason: str | None = None,
                   create: bool = False) -> Gate:
    """Change (or with `create`, make) an egress's gate; the gate row after the change."""
    async with conn.transaction():
        old = await one(conn, Gate, "gate_get_locked", {"egress_key": egress})
        if old is None and not create:
            raise FleetConfError(f"no egress gate {egress!r} (`bf4ps gate list` shows them; "
                                 "--create makes a new one)")
        requests, seconds = _window(change, old)
        interval = change.interval if change.interval is not None else (
            old.min_interval_seconds if old else None)
        if interval is None:
            raise FleetConfError(f"a new egress gate needs --interval: {egress!r}")
        params = {"egress_key": egress, "min_interval": interval, "window_requests": requests,
                  "window_seconds": seconds, "reason": reason}
        if old is None:
            return await one_row(conn, Gate, "gate_create", params)
        return await one_row(conn, Gate, "gate_update", params | {
            "cooldown_seconds": change.cooldown_seconds, "end_cooldown": change.end_cooldown})


async def gate(conn: Conn, egress: str) -> Gate | None:
    """An egress's gate, or None when the fleet has none of that name."""
    return await one(conn, Gate, "gate_get", {"egress_key": egress})


async def gates(conn: Conn) -> list[ListedGate]:
    return await all_rows(conn, ListedGate, "gate_list")


def _shares(current: policy_mod.Policy, given: dict[str, float]) -> policy_mod.Policy:
    unknown = sorted(set(given) - set(SHARES))
    if unknown:
        raise FleetConfError(f"no budget share for {', '.join(unknown)}: the classes with a "
                             f"share are {', '.join(SHARES)}")
    merged = current.model_dump() | {SHARES[cls]: f for cls, f in given.items()}
    try:
        pol = policy_mod.validated(merged)
    except policy_mod.PolicyError as exc:
        raise FleetConfError(f"budget shares: {exc}") from None
    floors = sum(float(getattr(pol, SHARES[c])) for c in FLOORS)
    if floors > 1 + 1e-9:
        raise FleetConfError(
            f"the floors ({', '.join(f'{c} {getattr(pol, SHARES[c]):g}' for c in FLOORS)}) add "
            f"up to {floors:g}: more than the whole budget")
    return pol


async def set_budget(conn: Conn, *, requests: int | None, window_seconds: float | None,
                     shares: dict[str, float], reason: str | None = None,
                     remove: bool = False) -> Budget:
    """Set the fleet budget (N requests per rolling window) and/or its class shares, or with
    `remove` end it (no budget; no collector's environment brings it back)."""
    async with conn.transaction():
        old = await one_row(conn, BudgetRow, "budget_get_locked")  # the migration made it
        new_requests = None if remove else (requests if requests is not None
                                            else old.requests)
        window = window_seconds if window_seconds is not None else old.window_seconds
        if requests is not None or window_seconds is not None or remove:
            await one_row(conn, BudgetRow, "budget_store", {
                "requests": new_requests, "window_seconds": window, "reason": reason,
                "configured": remove or new_requests is not None})
        if shares:
            await _store_shares(conn, shares, reason)
    return await show_budget(conn)


async def _store_shares(conn: Conn, shares: dict[str, float], reason: str | None) -> None:
    pol = _shares(await policy_mod.load(conn), shares)
    stored = pol.model_dump(mode="json")
    await give_reason(conn, reason)
    for cls in shares:
        await conn.execute(q("policy_set"), {"key": SHARES[cls], "by": None,
                                             "value": Jsonb(stored[SHARES[cls]])})


@dataclass(frozen=True, slots=True)
class _Use:
    used: int


async def show_budget(conn: Conn, history: int = 5) -> Budget:
    row = await one_row(conn, BudgetRow, "budget_get")
    use = await one(conn, _Use, "fleet_use")
    changes = await all_rows(conn, SettingsChange, "settings_changes_recent", {
        "settings": ["budget", "shares"], "subject": None, "limit": history})
    return Budget(requests=row.requests, window_seconds=row.window_seconds,
                  configured_at=row.configured_at, updated_by=row.updated_by,
                  updated_at=row.updated_at, used=use.used if use else 0,
                  shares=shares_of(await policy_mod.load(conn)), changes=changes)
