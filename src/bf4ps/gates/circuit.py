"""The fleet circuit breaker: an answer everybody gets wrong is Battlelog's problem, not the
soldiers'. A failure's signature is its class plus the recognized signal
(``unrecognized:login_wall``, ``not_found``, ``malformed:soft_throttle`` ...).

Many distinct soldiers of one lane/resource failing with one signature on more than one egress,
at a real share of the attempts since its first failure, open its circuit: pending jobs are held,
a failing job is held instead of retried or parked, one held job is released per probe
interval, and enough successes close it and release the rest. A lane's outage (``lane_wide``:
a login wall, a redirect to login, a 5xx, a timeout) is counted by job over every resource,
opens every circuit of the lane, gets one probe per interval and closes them all together.
The state is in the database (docs/battlelog.md, the fleet circuit breaker).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from bf4ps.battlelog.models import FetchResult
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Present, all_rows, one, one_row, q
from bf4ps.domain import ErrorClass, Resource
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.policy import Policy
from bf4ps.queue.jobs import ClaimedJob, CollectorRef

log = logging.getLogger(__name__)

# the classes whose mass failure says more about Battlelog (or BF4PS's idea of it) than about
# the soldiers: an unknown answer, a malformed one, a not-found (a login wall looks like one),
# an implausible one (a career of zeros), and every outage (5xx, redirects, timeouts)
TRIPPING = frozenset({ErrorClass.UNRECOGNIZED, ErrorClass.MALFORMED, ErrorClass.NOT_FOUND,
                      ErrorClass.IMPLAUSIBLE, ErrorClass.SERVER, ErrorClass.TIMEOUT})


# the signals (and classes) of Battlelog's own state: judged for the whole lane
LANE_SIGNALS = frozenset({"login_wall", "login_redirect", "maintenance_redirect", "redirect",
                          "http_5xx", "unknown_page"})
LANE_CLASSES = frozenset({ErrorClass.SERVER.value, ErrorClass.TIMEOUT.value})
STATS = tuple(r.value for r in Resource)


def lane_wide(sig: str | None) -> bool:
    """Is a failure of this signature Battlelog's state (an outage of the whole lane)?"""
    klass, _, signal = (sig or "").partition(":")
    return klass in LANE_CLASSES or signal in LANE_SIGNALS


def signature(error: ErrorClass, result: FetchResult | None) -> str:
    """The failure's signature: its class, and the recognized signal when there is one."""
    signal = result.details.get("signal") if result is not None else None
    return f"{error.value}:{signal}" if isinstance(signal, str) else error.value


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the circuit says about one failure: hold the job (open) or not."""

    hold: bool
    opened: bool = False


class _State(NamedTuple):
    state: str


class _Window(NamedTuple):
    """The window's attempts finished since the signature's first failure, and its failures."""

    finished: int
    failed: int
    soldiers: int
    egresses: int


class _Released(NamedTuple):
    job_id: int


class _Count(NamedTuple):
    n: int


class _Probed(NamedTuple):
    probe_successes: int
    close_successes: int


class _Closed(NamedTuple):
    opened_at: datetime
    closed_at: datetime
    probe_successes: int
    signature: str


async def judge(conn: Conn, me: CollectorRef, job: ClaimedJob, error: ErrorClass, sig: str,
                policy: Policy) -> Verdict:
    """Before a failure is finalized: is its lane/resource's circuit open (then the job is
    held), or does this failure open it?"""
    key: dict[str, Any] = {"lane": job.lane.value, "resource": job.resource}
    row = await one(conn, _State, "circuit_state", key)
    if row is not None and row.state == "open":
        return Verdict(hold=True)
    if error not in TRIPPING:
        return Verdict(hold=False)
    wide = lane_wide(sig) and job.resource in STATS
    resources = list(STATS) if wide else [job.resource]
    who = (job.job_id if wide else job.soldier_id if job.soldier_id is not None
           else -job.job_id)
    w = await one_row(conn, _Window, "circuit_window", key | {
        "window_seconds": policy.circuit_window_seconds, "who": who, "by_job": wide,
        "resources": resources, "egress_key": me.egress_key, "signature": sig})
    if not _trips(w, policy):
        return Verdict(hold=False)
    opened = False
    for resource in resources:
        opened = await _open(conn, me, key | {"resource": resource}, sig, w, policy) or opened
    return Verdict(hold=True, opened=opened)


def _trips(w: _Window, policy: Policy) -> bool:
    return (w.soldiers >= policy.circuit_min_soldiers
            and w.egresses >= policy.circuit_min_egresses
            and w.failed >= policy.circuit_min_failure_share * w.finished)


async def _open(conn: Conn, me: CollectorRef, key: dict[str, Any], sig: str,
                w: _Window, policy: Policy) -> bool:
    async with conn.transaction():
        row = await one(conn, Present, "circuit_open", key | {
            "signature": sig, "soldiers": w.soldiers, "egresses": w.egresses})
        await conn.execute(q("circuit_hold_pending"),
                           key | {"hold_seconds": policy.circuit_hold_seconds})
        if row is None:
            return False  # another collector opened it first
        await events.record(
            conn, EventType.CIRCUIT_OPENED, **me.event_fields(), lane=key["lane"],
            resource=key["resource"], result=sig[:40],
            details={"signature": sig, "soldiers": w.soldiers, "egresses": w.egresses,
                     "failed": w.failed, "finished": w.finished,
                     "probe_seconds": policy.circuit_probe_seconds})
    log.warning("circuit opened for %s/%s: %s from %s soldiers on %s egresses", key["lane"],
                key["resource"], sig, w.soldiers, w.egresses)
    return True


class _Circuit(NamedTuple):
    lane: str
    resource: str


class _Due(NamedTuple):
    lane: str
    resource: str
    signature: str
    probe_seconds: float


class _Open(NamedTuple):
    lane: str
    resource: str
    signature: str


async def open_circuits(conn: Conn) -> set[tuple[str, str]]:
    return {(r.lane, r.resource) for r in await all_rows(conn, _Circuit, "circuit_open_list")}


def _turns(due: list[_Due]) -> list[_Due]:
    """The due circuits in probe order: a lane's outage circuits take turns (by probe
    interval), so each of its resources is probed in its turn."""
    def turn(row: _Due) -> tuple[str, int]:
        if not lane_wide(row.signature) or row.resource not in STATS:
            return row.lane, 0
        shift = int(time.time() // max(row.probe_seconds, 1e-3))
        return row.lane, (STATS.index(row.resource) - shift) % len(STATS)
    return sorted(due, key=turn)


async def release_probes(conn: Conn, me: CollectorRef) -> int:
    """Release one held job of every open circuit whose probe is due (a lane's outage: of one
    of its circuits, the first in turn holding work); how many were."""
    released = 0
    probed: set[str] = set()  # lanes whose outage got its one probe
    async with conn.transaction():
        for row in _turns(await all_rows(conn, _Due, "circuit_probes_due")):
            wide = lane_wide(row.signature)
            if wide and row.lane in probed:
                continue
            key: dict[str, Any] = {"lane": row.lane, "resource": row.resource}
            got = await one(conn, _Released, "circuit_release_one", key)
            if got is None and wide:
                continue  # nothing held here: the lane's probe goes to the next in turn
            await events.record(conn, EventType.CIRCUIT_PROBE, **me.event_fields(), **key,
                                job_id=got.job_id if got else None,
                                result="released" if got else "nothing_held")
            released += got is not None
            if wide:
                probed.add(row.lane)
                await conn.execute(q("circuit_lane_probe_later"),
                                   {"lane": row.lane, "signature": row.signature})
    return released


async def succeeded(conn: Conn, me: CollectorRef, job: ClaimedJob) -> bool:
    """A success of an open circuit's lane/resource (a probe, or work already under way):
    closes the circuit once enough came in (a lane's outage: every circuit of the lane it
    opened). True when this closed it."""
    key: dict[str, Any] = {"lane": job.lane.value, "resource": job.resource}
    async with conn.transaction():
        probed = await one(conn, _Probed, "circuit_probe_succeeded", key)
        if probed is None:
            return False
        if probed.probe_successes < probed.close_successes:
            got = await one(conn, _Released, "circuit_release_one", key)  # the next probe, now
            await events.record(conn, EventType.CIRCUIT_PROBE, **me.event_fields(), **key,
                                job_id=got.job_id if got else None,
                                result="released_after_success" if got else "nothing_held")
            return False
        closed = await _close(conn, me, key)
        if closed is None:
            return False
        if lane_wide(closed.signature):
            for other in await all_rows(conn, _Open, "circuit_open_in_lane", key):
                if lane_wide(other.signature):
                    await _close(conn, me, {"lane": other.lane, "resource": other.resource})
    return True


async def _close(conn: Conn, me: CollectorRef, key: dict[str, Any]) -> _Closed | None:
    """Close an open circuit and release every job it held (the caller's transaction)."""
    closed = await one(conn, _Closed, "circuit_close", key)
    if closed is None:
        return None
    released = await one(conn, _Count, "circuit_release_all", key)
    n = released.n if released else 0
    await events.record(
        conn, EventType.CIRCUIT_CLOSED, **me.event_fields(), **key, result="closed",
        details={"signature": closed.signature, "released_jobs": n,
                 "probe_successes": closed.probe_successes,
                 "open_seconds": round((closed.closed_at
                                        - closed.opened_at).total_seconds(), 1)})
    log.info("circuit closed for %s/%s: %s held jobs released", key["lane"], key["resource"], n)
    return closed
