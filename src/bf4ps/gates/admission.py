"""Admission: one transaction that finds the next send slot for this egress (and the fleet
budget), claims a job allowed to use it, and counts the request in the ledger before anything is
sent. Nothing is claimed unless the slot opens within the claim horizon (at least the connect
lead: a request is begun that long before its slot, so no slot is sooner than that)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Lane
from bf4ps.gates.budget import Window, allowed_classes, earliest_slot
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue.jobs import ClaimedJob, CollectorRef


@dataclass(frozen=True)
class GateConfig:
    min_interval: float
    window_requests: int | None
    window_seconds: float | None
    margin: float
    horizon: float
    lease_seconds: float
    connect_lead: float = 1.0  # a request is begun this long before its slot (window.py)

    @property
    def ahead(self) -> float:
        """How long before its slot a job may be claimed."""
        return max(self.horizon, self.connect_lead)


@dataclass(frozen=True)
class Slot:
    """A send time and the request_ledger row that counts it."""

    at: datetime
    request_id: int


@dataclass(frozen=True)
class Admitted:
    job: ClaimedJob
    slot: Slot

    @property
    def slot_at(self) -> datetime:
        return self.slot.at


@dataclass(frozen=True)
class Wait:
    """Nothing claimed: try again at `until` (gate closed) or later (no work: idle)."""

    until: datetime | None
    idle: bool = False


class _Stop(Exception):
    def __init__(self, wait: Wait) -> None:
        self.wait = wait


async def _one(conn: Conn, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
    cur = await conn.execute(q(name), params)
    return await cur.fetchone()


def effective_interval(min_interval: float, streak: int, margin: float) -> float:
    """After throttles the egress recovers gradually: slower pacing until the streak decays."""
    return min_interval * (1 + 0.5 * streak) + margin


def paced_slot(gate: dict[str, Any], now: datetime, connect_lead: float) -> datetime:
    """An egress's next slot by its pacing and cool-down, at least the connect lead from now
    (the admission's rule; the ETA models the lane with it too)."""
    slot: datetime = max(now + timedelta(seconds=connect_lead), gate["next_slot_at"])
    if gate["cooldown_until"] is not None:
        slot = max(slot, gate["cooldown_until"])
    return slot


async def _egress_slot(conn: Conn, gate: dict[str, Any], cfg: GateConfig) -> datetime:
    slot = paced_slot(gate, gate["now"], cfg.connect_lead)
    if gate["window_requests"]:
        nth = await _one(conn, "egress_nth_latest", {"egress_key": gate["egress_key"],
                                                     "offset": gate["window_requests"] - 1})
        if nth is not None:
            slot = max(slot, nth["slot_at"] + timedelta(
                seconds=float(gate["window_seconds"]) + cfg.margin))
    return slot


async def _window(conn: Conn, slot: datetime, seconds: float) -> Window:
    cur = await conn.execute(q("fleet_window"), {"since": slot - timedelta(seconds=seconds)})
    rows = await cur.fetchall()
    return Window({str(r["budget_class"]): int(r["n"]) for r in rows},
                  max((r["last_slot"] for r in rows), default=None))


async def _fleet(conn: Conn, slot: datetime, me: CollectorRef, cfg: GateConfig,
                 policy: Policy) -> tuple[datetime, list[str] | None]:
    fleet = await _one(conn, "fleet_lock", {})
    if fleet is None or fleet["requests"] is None:
        return slot, None
    n, w = int(fleet["requests"]), float(fleet["window_seconds"])
    # slots that left the window less than the margin ago still count: a request may leave a
    # little after its slot, so N + 1 slots must span at least W + margin (as on the slow path)
    span = w + cfg.margin
    window = await _window(conn, slot, span)
    if window.total >= n:
        nth = await _one(conn, "fleet_nth_latest", {"offset": n - 1})
        slot = earliest_slot(slot, n=n, window_seconds=w, in_window=window.total,
                             last_slot=window.last_slot,
                             nth_latest=nth["slot_at"] if nth else None, margin=cfg.margin)
        window = await _window(conn, slot, span)  # the window the later slot will be in
    if slot > fleet["now"] + timedelta(seconds=cfg.ahead):
        raise _Stop(Wait(slot - timedelta(seconds=cfg.ahead)))
    interactive = me.lane is Lane.INTERACTIVE
    demand = set() if interactive else await _demand(conn)  # the interactive lane needs none
    classes = allowed_classes(n, window, demand, policy, interactive_lane=interactive)
    if not classes:
        raise _Stop(Wait(fleet["now"] + timedelta(seconds=1)))
    return slot, classes


async def _demand(conn: Conn) -> set[str]:
    cur = await conn.execute(q("budget_demand"))
    return {str(r["cls"]) for r in await cur.fetchall()}


async def admit(conn: Conn, me: CollectorRef, cfg: GateConfig, policy: Policy,
                soldier_id: int | None = None) -> Admitted | Wait:
    try:
        async with conn.transaction():
            return await _admit(conn, me, cfg, policy, soldier_id)
    except _Stop as stop:
        return stop.wait


async def _admit(conn: Conn, me: CollectorRef, cfg: GateConfig, policy: Policy,
                 soldier_id: int | None) -> Admitted:
    gate, slot = await _open_slot(conn, me, cfg)
    slot, classes = await _fleet(conn, slot, me, cfg, policy)
    job = await qclaim.claim(conn, me, cfg.lease_seconds, soldier_id=soldier_id,
                             classes=classes)
    if job is None:
        raise _Stop(Wait(None, idle=True))
    return Admitted(job, await _count(conn, me, gate, cfg, slot, job))


async def extra_slot(conn: Conn, me: CollectorRef, cfg: GateConfig, policy: Policy,
                     job: ClaimedJob) -> Slot | Wait:
    """A further request for a job already held (the profile's account lookup)."""
    try:
        async with conn.transaction():
            gate, slot = await _open_slot(conn, me, cfg)
            slot, _ = await _fleet(conn, slot, me, cfg, policy)
            return await _count(conn, me, gate, cfg, slot, job)
    except _Stop as stop:
        return stop.wait


async def _open_slot(conn: Conn, me: CollectorRef,
                     cfg: GateConfig) -> tuple[dict[str, Any], datetime]:
    """Lock this egress's gate and find its next slot; stop unless it opens within the
    horizon."""
    gate = await _one(conn, "gate_lock", {"egress_key": me.egress_key})
    if gate is None:
        raise RuntimeError(f"no rate gate for egress {me.egress_key}")
    slot = await _egress_slot(conn, gate, cfg)
    if slot > gate["now"] + timedelta(seconds=cfg.ahead):
        raise _Stop(Wait(slot - timedelta(seconds=cfg.ahead)))
    return gate, slot


async def _count(conn: Conn, me: CollectorRef, gate: dict[str, Any], cfg: GateConfig,
                 slot: datetime, job: ClaimedJob) -> Slot:
    """Count the request in the ledger (before anything is sent) and advance the gate past it."""
    row = await _one(conn, "ledger_insert", {
        "slot_at": slot, "egress_key": me.egress_key, "budget_class": job.budget_class,
        "collector_uuid": me.collector_uuid, "job_id": job.job_id, "resource": job.resource})
    assert row is not None
    interval = effective_interval(float(gate["min_interval_seconds"]),
                                  int(gate["throttle_streak"]), cfg.margin)
    await conn.execute(q("gate_advance"), {
        "egress_key": me.egress_key, "next_slot_at": slot + timedelta(seconds=interval)})
    return Slot(slot, int(row["request_id"]))


async def operator_slot(conn: Conn, egress_key: str, cfg: GateConfig, policy: Policy,
                        resource: str) -> Slot | Wait:
    """A slot for a request that serves no job (an operator's `bf4ps battlelog fetch`): the
    egress gate and the fleet budget as for any request, counted in the ledger before it is
    sent, as interactive work of no collector."""
    # the gate and budget steps read only the egress and the lane of who asks
    asking = CollectorRef(UUID(int=0), "operator", "", egress_key, Lane.INTERACTIVE)
    try:
        async with conn.transaction():
            gate, slot = await _open_slot(conn, asking, cfg)
            slot, _ = await _fleet(conn, slot, asking, cfg, policy)
            row = await _one(conn, "ledger_insert", {
                "slot_at": slot, "egress_key": egress_key, "budget_class": "interactive",
                "collector_uuid": None, "job_id": None, "resource": resource})
            assert row is not None
            interval = effective_interval(float(gate["min_interval_seconds"]),
                                          int(gate["throttle_streak"]), cfg.margin)
            await conn.execute(q("gate_advance"), {
                "egress_key": egress_key, "next_slot_at": slot + timedelta(seconds=interval)})
            return Slot(slot, int(row["request_id"]))
    except _Stop as stop:
        return stop.wait
