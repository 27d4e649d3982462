"""A collector's failures, judged by the fleet circuit first (gates/circuit.py), and its
successes counted toward closing an open circuit; an implausible answer's failure
(stats/plausible.py) with its suspect run and archived body."""

from __future__ import annotations

from bf4ps.battlelog.models import FetchResult
from bf4ps.collector.heartbeat import Heartbeat
from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass
from bf4ps.gates import circuit
from bf4ps.policy import Policy
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome
from bf4ps.stats import archive, plausible


async def fail(conn: Conn, me: CollectorRef, heartbeat: Heartbeat, job: ClaimedJob,
               error: ErrorClass, message: str, attempt: Attempt, policy: Policy,
               result: FetchResult | None) -> Outcome:
    """A classified failure, judged by the fleet circuit first: while the lane/resource's
    circuit is open (or this failure opens it) the job is held, never parked."""
    sig = circuit.signature(error, result)
    if attempt.details is not None:
        attempt.details["signature"] = sig
    verdict = await circuit.judge(conn, me, job, error, sig, policy)
    if verdict.hold:
        heartbeat.open_circuits.add((job.lane.value, job.resource))
    return await finalize.fail(conn, me, job, error, message, attempt, policy,
                               hold_seconds=policy.circuit_hold_seconds if verdict.hold
                               else None)


async def implausible(conn: Conn, me: CollectorRef, heartbeat: Heartbeat, job: ClaimedJob,
                      verdict: plausible.Verdict, attempt: Attempt, policy: Policy,
                      raw: archive.RawAnswer | None) -> Outcome:
    """An answer lower than what is stored: failed (retried, never parked, counted by the
    circuit), the run of suspect answers extended, the body archived."""
    assert job.soldier_id is not None
    details = dict(attempt.details or {}) | verdict.details()
    attempt = Attempt(attempt.http_status, attempt.duration_ms, details)
    outcome = await fail(conn, me, heartbeat, job, ErrorClass.IMPLAUSIBLE, verdict.message,
                         attempt, policy, None)
    if outcome.committed:
        await plausible.record_suspect(conn, job, verdict)
        if raw is not None:
            await archive.keep(conn, job.soldier_id, raw, ErrorClass.IMPLAUSIBLE.value,
                               policy.archive_answers_kept)
    return outcome


async def circuit_success(conn: Conn, me: CollectorRef, heartbeat: Heartbeat,
                          job: ClaimedJob) -> None:
    key = (job.lane.value, job.resource)
    if key in heartbeat.open_circuits and await circuit.succeeded(conn, me, job):
        heartbeat.open_circuits.discard(key)
