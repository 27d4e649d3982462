"""Running reconnaissance from one egress: every request through the egress gate and the
fleet budget (admission's Python API: the slot is counted in request_ledger before anything is
sent, a missed slot is given up as unsent), stored in recon_samples.

Recon registers a collector of its own (``recon-<egress>``, lane background) so that its
ledger rows and events name who sent them; it sets the egress gate's pacing to each stage's
interval and puts the previous pacing back at the end. A burst is pipelined: the next slot is
taken as soon as the previous request is begun, not after its answer, so the slots are the
gate's pacing apart and the answers overlap as a collector's do. Each sample's ``sent_at`` is
when its headers really left, which the ladder measures its spacing by (docs/battlelog.md).
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple
from uuid import uuid4

from psycopg.types.json import Jsonb

from bf4ps import __version__
from bf4ps.battlelog.classify import is_soft_throttle
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.models import FetchResult
from bf4ps.collector import slots
from bf4ps.collector.identity import Wanted, register
from bf4ps.collector.slots import Pacing
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Present, one, one_row, q
from bf4ps.domain import JobKind, Lane, Platform, PriorityClass, Resource
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.gates import admission
from bf4ps.gates.admission import Slot
from bf4ps.gates.restore import Marks, current_hold
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Lease
from bf4ps.recon.ladder import Plan, Report, Sample
from bf4ps.settings import SendTimings

Persona = tuple[int, Platform]
RECON_JOB_ID = admission.UNATTACHED_JOB_ID  # recon requests are of no queue job


class ReconError(RuntimeError):
    """Recon could not run (no personas, no slot)."""


@dataclass
class Recon:
    conn: Conn
    me: CollectorRef
    gate: SendTimings
    client: BattlelogClient
    plan: Plan
    run_id: int
    samples: list[Sample] = field(default_factory=list)
    marks: Marks = field(default_factory=Marks)  # shown at each guard check, as a collector's
    _seq: int = 0

    async def burst(self, wanted: Sequence[tuple[Resource, Persona]], phase: str,
                    stage: int | None, interval: float | None) -> list[Sample]:
        """`wanted` requests at the gate's pacing, each in its own admitted slot (counted
        before it is sent); the samples in the order they were sent."""
        tasks = []
        try:
            async with asyncio.TaskGroup() as group:
                for resource, persona in wanted:
                    pacing, slot = await self._slot(resource, persona)  # its lead ahead
                    tasks.append(group.create_task(self._send(
                        pacing, slot, resource, persona, (phase, stage, interval),
                        self._next())))
        except* ReconError as failed:
            raise failed.exceptions[0] from None
        return sorted((t.result() for t in tasks), key=lambda s: s.sent_at)

    def _next(self) -> int:
        self._seq += 1
        return self._seq - 1

    async def _slot(self, resource: Resource, persona: Persona) -> tuple[Pacing, Slot]:
        """The next admitted slot (counted before it is sent); none while the restore guard
        holds the fleet."""
        held = await current_hold(self.conn, self.marks)
        if held is not None:
            raise ReconError(f"sends are held until {held.until:%Y-%m-%d %H:%M:%S} UTC after a "
                             f"restore ({held.reason}); nothing was sent")
        pacing = Pacing(self.me, self.gate, _recon_job(resource, persona))
        slot = await slots.next_slot(self.conn, pacing, tries=100)
        if slot is None:
            raise ReconError("the egress gate gave no send slot")
        return pacing, slot

    async def _send(self, pacing: Pacing, slot: Slot, resource: Resource, persona: Persona,
                    where: tuple[str, int | None, float | None], seq: int) -> Sample:
        sent = await slots.send_in_slot(self.conn, pacing, slot, lambda window: self.client.fetch(
            resource, persona[0], persona[1], window=window), tries=5)
        if sent is None:
            raise ReconError("no request could be sent in its slot")
        result, used = sent
        sample = _sample(result, resource, persona, where, used.at)
        await self._store(sample, seq, used.request_id)
        return sample

    async def pace(self, interval: float) -> None:
        if await one(self.conn, Present, "recon_gate_interval", {
            "egress_key": self.me.egress_key, "min_interval": interval}) is None:
            raise ReconError(f"no rate gate for egress {self.me.egress_key}")

    async def _store(self, s: Sample, seq: int, ledger_request_id: int) -> None:
        await self.conn.execute(q("recon_sample_insert"), {
            "run_id": self.run_id, "seq": seq, "phase": s.phase, "stage": s.stage,
            "interval_seconds": s.interval, "ledger_request_id": ledger_request_id,
            "resource": s.resource, "persona_id": s.persona_id, "platform": s.platform,
            "sent_at": datetime.fromtimestamp(s.sent_at, UTC), "http_status": s.http_status,
            "error_class": s.error_class, "message": s.message[:500] or None,
            "wire_bytes": s.wire_bytes, "decoded_bytes": s.decoded_bytes,
            "latency_ms": int(s.latency_seconds * 1000)})
        self.samples.append(s)


def _recon_job(resource: Resource, persona: Persona) -> ClaimedJob:
    """What the gates need to count a recon request: its resource and budget class."""
    now = datetime.now(UTC)
    return ClaimedJob(
        lease=Lease(RECON_JOB_ID, uuid4(), uuid4()), soldier_id=None, kind=JobKind(resource),
        lane=Lane.BACKGROUND, priority_class=PriorityClass.BOOTSTRAP, reason="recon",
        attempt_count=0, claimed_at=now, lease_expires_at=now, reclaimed=False,
        is_retry=False, persona_id=persona[0], platform=persona[1], soldier_name=None,
        request_id=None, lookup_name=None, lookup_platform=None)


def _sample(result: FetchResult, resource: Resource, persona: Persona,
            where: tuple[str, int | None, float | None], slot_at: datetime) -> Sample:
    wire = result.details.get("wire_bytes")
    phase, stage, interval = where
    return Sample(
        phase=phase, stage=stage, interval=interval, resource=resource.value,
        persona_id=persona[0], platform=persona[1].value,
        sent_at=result.sent_at if result.sent_at is not None else slot_at.timestamp(),
        http_status=result.http_status,
        error_class=result.error_class.value if result.error_class else None,
        message=result.message, wire_bytes=int(wire) if isinstance(wire, int) else 0,
        decoded_bytes=result.size_bytes, latency_seconds=result.duration_seconds,
        soft_throttle=is_soft_throttle(result))


def collector_name(egress_key: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", egress_key).strip("-._") or "egress"
    return f"recon-{cleaned}"[:63]


class _Run(NamedTuple):
    run_id: int


async def begin(conn: Conn, data_dir: Path, egress_key: str, source_address: str | None,
                plan: Plan, personas: list[Persona]) -> tuple[CollectorRef, int]:
    """Register recon's collector and open the run's row."""
    want = Wanted(collector_name(egress_key), socket.gethostname()[:255] or "recon",
                  Lane.BACKGROUND, egress_key, source_address, __version__)
    me = await register(conn, data_dir, want)
    row = await one_row(conn, _Run, "recon_run_insert", {
        "egress_key": egress_key, "settings": Jsonb(asdict(plan) | {
            "source_address": source_address,
            "personas": [[p, f.value] for p, f in personas]})})
    return me, row.run_id


async def finish(conn: Conn, recon: Recon, report: Report) -> None:
    async with conn.transaction():
        await conn.execute(q("recon_run_finish"), {
            "run_id": recon.run_id, "stopped_by": report.stopped_by[:200],
            "threshold": report.threshold_interval_seconds,
            "recommended": report.recommended_interval_seconds,
            "safety": recon.plan.safety, "summary": Jsonb(asdict(report))})
        await events.record(conn, EventType.RECON_FINISHED, **recon.me.event_fields(),
                            lane=recon.me.lane.value, result="finished",
                            details={"run_id": recon.run_id,
                                     "requests": len(recon.samples),
                                     "recommended": report.recommended_interval_seconds})
        await conn.execute(q("collector_stopped"), {"collector_uuid": recon.me.collector_uuid})


async def pause(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(left, 1.0))
