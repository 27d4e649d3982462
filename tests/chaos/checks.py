"""The invariants a chaos run must keep, read from the database and the simulator's counters after
everything stopped. Each check returns a verdict with the evidence (the first few offenders)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from bf4ps.db.connect import Conn
from tests.chaos.record import Record
from tests.chaos.sampler import COUNTERS

SHOW = 5  # offenders quoted per failed check
FINALIZED = ("succeeded", "failed", "released", "lease_expired")  # what ends a lease token


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        tail = f": {self.detail}" if self.detail else ""
        return f"[{'ok' if self.ok else 'FAIL'}] {self.name}{tail}"


@dataclass(frozen=True)
class Limits:
    lease: float
    tick: float
    lost_after: float
    interval: float = 1.0  # per-egress spacing
    margin: float = 0.0  # BF4PS_EGRESS_SAFETY_MARGIN_SECONDS
    budget_window: float = 3600.0
    slack: float = 4.0  # scheduling jitter on a shared 2-core machine
    outage_slack: float = 4.0  # reconnecting after a PostgreSQL restart


@dataclass
class Outcome:
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, offenders: list[Any], ok_detail: str = "",
            total: int | None = None) -> None:
        if offenders:
            n = total if total is not None else len(offenders)
            shown = "; ".join(str(o) for o in offenders[:SHOW])
            self.checks.append(Check(name, False, f"{n} offender(s): {shown}"))
        else:
            self.checks.append(Check(name, True, ok_detail))


async def _all(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    cur = await conn.execute(sql, params or {})  # type: ignore[arg-type]
    return list(await cur.fetchall())


async def _one(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> Any:
    rows = await _all(conn, sql, params)
    return next(iter(rows[0].values())) if rows else None


def _ts(value: datetime) -> float:
    return value.timestamp()


async def evaluate(conn: Conn, rec: Record, limits: Limits, budget: int | None) -> Outcome:
    out = Outcome()
    await _processes(out, rec)
    await _wire(out, rec, budget)
    await _ledger(conn, out, limits, budget)
    await _none_lost(conn, out)
    await _queue_matches_state(conn, out)
    await _no_double_commit(conn, out)
    tokens = await _token_trails(conn)
    await _kills_reclaimed(conn, out, rec, tokens, limits)
    await _zombies(conn, out, rec, tokens)
    await _stats(conn, out, rec)
    await _heartbeats(conn, out, rec, limits)
    await _figures(conn, out, rec)
    return out


# ---------------------------------------------------------------- processes and the wire


async def _processes(out: Outcome, rec: Record) -> None:
    bad = [f"{name} exited {code}" for name, code in sorted(rec.exit_codes.items()) if code != 0]
    out.add("survivors exit 0 on SIGTERM", bad, f"{len(rec.exit_codes)} processes")
    out.add("no process died unplanned (bf4sw live aside)", rec.unexpected_exits)


async def _wire(out: Outcome, rec: Record, budget: int | None) -> None:
    sim: dict[str, Any] = rec.sim  # type: ignore[assignment]
    violations = sim.get("violations", {})
    total = int(violations.get("total", -1))
    out.add("zero rate-limit violations at the wire",
            [f"total {total}"] + [str(v) for v in violations.get("recent", [])[:SHOW]]
            if total != 0 else [], f"{sim.get('requests_total')} requests")
    if budget is not None:
        fleet = sim.get("fleet", {})
        fv = int(fleet.get("violations", -1))
        out.add("zero fleet budget violations", [f"{fv} violations, fleet {fleet}"] if fv else [],
                f"max {fleet.get('max_in_window')} of {budget} in a window")
    # the simulator requires the session check-sum: every search must have carried a valid one
    by_resource, by_outcome = sim.get("by_resource", {}), sim.get("by_outcome", {})
    refused = int(by_outcome.get("bad_check_sum", -1))
    out.add("every search carried its session's check-sum", [f"{refused} refused"] if refused
            else [], f"{by_resource.get('search')} searches, "
                     f"{by_resource.get('index')} sessions opened")


async def _ledger(conn: Conn, out: Outcome, limits: Limits, budget: int | None) -> None:
    """The provable ceiling, read from the ledger: slots of one egress at least interval +
    margin apart, and (with a budget) never N + 1 slots inside one window."""
    close = await _all(conn, """
        SELECT egress_key, slot_at, gap FROM (
            SELECT egress_key, slot_at,
                   extract(epoch FROM slot_at - lag(slot_at) OVER w)::float8 AS gap
            FROM request_ledger WINDOW w AS (PARTITION BY egress_key ORDER BY slot_at)) g
        WHERE gap < %(spacing)s ORDER BY gap""",
        {"spacing": limits.interval + limits.margin - 0.001})
    out.add("ledger: slots of one egress at least interval + margin apart",
            [f"{r['egress_key']} {r['gap']:.3f} s at {r['slot_at']}" for r in close])
    if budget is None:
        return
    spans = await _all(conn, """
        SELECT slot_at, extract(epoch FROM later - slot_at)::float8 AS span FROM (
            SELECT slot_at, lead(slot_at, %(n)s) OVER (ORDER BY slot_at) AS later
            FROM request_ledger WHERE unsent_at IS NULL) s
        WHERE later IS NOT NULL ORDER BY span LIMIT 1000""", {"n": budget})
    inside = [r for r in spans if r["span"] < limits.budget_window]
    tight = [r for r in spans if r["span"] < limits.budget_window + limits.margin]
    out.figures["ledger: N+1 slots within window + margin (no margin left)"] = len(tight)
    out.add(f"ledger: never {budget + 1} slots inside one {limits.budget_window:.0f} s window",
            [f"{budget + 1} slots within {r['span']:.3f} s from {r['slot_at']}" for r in inside])


# ---------------------------------------------------------------- no lost work


async def _none_lost(conn: Conn, out: Outcome) -> None:
    lost = await _all(conn, """
        SELECT DISTINCT c.job_id, c.soldier_id, c.resource FROM collection_events c
        WHERE c.event_type = 'created'
          AND NOT EXISTS (SELECT 1 FROM collection_jobs j WHERE j.job_id = c.job_id)
          AND NOT EXISTS (SELECT 1 FROM collection_events e WHERE e.job_id = c.job_id
                          AND e.event_type IN ('succeeded', 'unavailable'))
        ORDER BY c.job_id""")
    created = await _one(conn, "SELECT count(DISTINCT job_id) FROM collection_events "
                               "WHERE event_type = 'created'")
    out.add("every created job is still queued or finished (succeeded/unavailable)",
            [dict(r) for r in lost], f"{created} jobs created")
    stuck = await _all(conn, """
        SELECT r.request_id, r.status, r.lookup_name, r.soldier_id FROM interactive_requests r
        WHERE r.status IN ('queued', 'collecting') AND NOT EXISTS (
            SELECT 1 FROM collection_jobs j WHERE j.request_id = r.request_id)""")
    out.add("every open interactive request still has queued work", [dict(r) for r in stuck])
    orphans = await _all(conn, """
        SELECT j.job_id FROM collection_jobs j WHERE NOT EXISTS (
            SELECT 1 FROM collection_events e WHERE e.job_id = j.job_id
              AND e.event_type = 'created')""")
    out.add("every queued job has its created event", [r["job_id"] for r in orphans])


async def _queue_matches_state(conn: Conn, out: Outcome) -> None:
    held = await _all(conn, "SELECT job_id, status, collector_uuid, lease_expires_at "
                            "FROM collection_jobs WHERE status <> 'pending'")
    out.add("no job left claimed/running after a graceful stop", [dict(r) for r in held])
    stranded = await _all(conn, """
        SELECT cs.soldier_id, cs.resource, cs.next_attempt_at FROM collection_state cs
        WHERE cs.status = 'retry_wait' AND cs.next_attempt_at > clock_timestamp()
          AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                          WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)""")
    out.add("every retry_wait state has its job (or is due for the feeder)",
            [dict(r) for r in stranded])
    stateless = await _all(conn, """
        SELECT j.job_id, j.soldier_id, j.resource FROM collection_jobs j
        WHERE j.resource <> 'lookup' AND NOT EXISTS (
            SELECT 1 FROM collection_state cs
            WHERE cs.soldier_id = j.soldier_id AND cs.resource = j.resource)""")
    out.add("every job has its collection_state row", [dict(r) for r in stateless])
    # the last recorded outcome of every (soldier, resource) is what its state says
    contradict = await _all(conn, """
        WITH last AS (
            SELECT DISTINCT ON (soldier_id, resource) soldier_id, resource, event_type
            FROM collection_events
            WHERE event_type IN ('succeeded', 'retry_scheduled', 'unavailable')
              AND soldier_id IS NOT NULL AND resource <> 'lookup'
            ORDER BY soldier_id, resource, event_id DESC)
        SELECT cs.soldier_id, cs.resource, cs.status, last.event_type AS last_outcome
        FROM collection_state cs LEFT JOIN last USING (soldier_id, resource)
        WHERE NOT ((last.event_type IS NULL AND cs.status = 'never_attempted')
                OR (last.event_type = 'succeeded' AND cs.status IN ('current', 'due'))
                OR (last.event_type = 'retry_scheduled' AND cs.status = 'retry_wait')
                OR (last.event_type = 'unavailable' AND cs.status = 'unavailable'))
        ORDER BY 1, 2""")
    out.add("collection_state agrees with the last outcome in the event log",
            [dict(r) for r in contradict])
    counted = await _all(conn, """
        WITH attempts AS (
            SELECT soldier_id, resource, count(*) AS n FROM collection_events
            WHERE event_type IN ('succeeded', 'failed') AND soldier_id IS NOT NULL
              AND resource <> 'lookup'
            GROUP BY 1, 2)
        SELECT cs.soldier_id, cs.resource, cs.attempts_total, COALESCE(a.n, 0) AS outcomes
        FROM collection_state cs LEFT JOIN attempts a USING (soldier_id, resource)
        WHERE cs.attempts_total <> COALESCE(a.n, 0)
        ORDER BY 1, 2""")
    out.add("attempts_total = recorded outcomes (no attempt counted twice or lost)",
            [dict(r) for r in counted])


# ---------------------------------------------------------------- no double commit


async def _no_double_commit(conn: Conn, out: Outcome) -> None:
    twice = await _all(conn, "SELECT job_id, count(*) AS n FROM collection_events "
                             "WHERE event_type = 'succeeded' GROUP BY 1 HAVING count(*) > 1")
    out.add("no job succeeded twice", [dict(r) for r in twice])
    tokens = await _all(conn, """
        SELECT lease_token, array_agg(event_type ORDER BY event_id) AS outcomes
        FROM collection_events WHERE event_type IN ('succeeded', 'failed')
        GROUP BY 1 HAVING count(*) > 1 OR bool_or(lease_token IS NULL)""")
    out.add("no lease token finalized twice", [dict(r) for r in tokens])


# ---------------------------------------------------------------- lease recovery


@dataclass
class Trail:
    token: UUID
    job_id: int
    collector: UUID | None
    claimed_at: float
    ended_by: str | None = None
    ended_at: float | None = None
    events: list[tuple[str, float, str | None]] = field(default_factory=list)


async def _token_trails(conn: Conn) -> dict[UUID, Trail]:
    rows = await _all(conn, """
        SELECT event_type, lease_token, job_id, collector_uuid, collector_name, occurred_at
        FROM collection_events_log
        WHERE lease_token IS NOT NULL AND event_type IN
            ('claimed', 'succeeded', 'failed', 'released', 'lease_expired',
             'stale_finalize_rejected')
        ORDER BY event_id, ord""")
    trails: dict[UUID, Trail] = {}
    for r in rows:
        token = r["lease_token"]
        at = _ts(r["occurred_at"])
        if r["event_type"] == "claimed":
            trails[token] = Trail(token, r["job_id"], r["collector_uuid"], at)
        trail = trails.get(token)
        if trail is None:
            continue
        trail.events.append((r["event_type"], at, r["collector_name"]))
        if trail.ended_by is None and r["event_type"] in FINALIZED:
            trail.ended_by, trail.ended_at = r["event_type"], at
    return trails


def _outage_overlap(rec: Record, lo: float, hi: float) -> float:
    return sum(max(0.0, min(hi, b) - max(lo, a)) for a, b in rec.outages())


async def _kills_reclaimed(conn: Conn, out: Outcome, rec: Record, tokens: dict[UUID, Trail],
                           limits: Limits) -> None:
    reclaims: dict[int, list[float]] = defaultdict(list)
    for r in await _all(conn, "SELECT job_id, occurred_at FROM collection_events "
                              "WHERE event_type = 'reclaimed'"):
        reclaims[r["job_id"]].append(_ts(r["occurred_at"]))
    by_collector: dict[UUID | None, list[Trail]] = defaultdict(list)
    for trail in tokens.values():
        by_collector[trail.collector].append(trail)
    offenders: list[str] = []
    latencies: list[float] = []
    held_total = 0
    for kill in rec.kills:
        if kill.uuid is None:
            offenders.append(f"{kill.name}: uuid unknown")
            continue
        held = [t for t in by_collector[kill.uuid]
                if t.claimed_at <= kill.at and (t.ended_at is None or t.ended_at > kill.at)]
        held_total += len(held)
        for t in held:
            if t.ended_by in ("succeeded", "failed") and t.ended_at is not None \
                    and t.ended_at <= kill.at + 1.0:
                continue  # its commit was on the wire when the signal landed
            if t.ended_by != "lease_expired" or t.ended_at is None:
                offenders.append(f"{kill.name} killed at {kill.at:.1f}: job {t.job_id} "
                                 f"ended by {t.ended_by}")
                continue
            if not any(abs(at - t.ended_at) <= 2.0 for at in reclaims.get(t.job_id, [])):
                offenders.append(f"job {t.job_id}: lease_expired without its reclaimed event")
            latency = t.ended_at - kill.at
            latencies.append(latency)
            bound = (limits.lease + limits.tick + limits.slack
                     + _outage_overlap(rec, kill.at, kill.at + limits.lease + limits.slack))
            if any(a <= kill.at + bound and b >= kill.at for a, b in rec.outages()):
                bound += limits.outage_slack
            if latency > bound:
                offenders.append(f"{kill.name} killed at {kill.at:.1f}: job {t.job_id} "
                                 f"reclaimed after {latency:.1f} s > {bound:.1f} s")
    out.figures["jobs held by killed collectors"] = held_total
    out.figures["max reclaim latency after a kill (s)"] = round(max(latencies), 2) \
        if latencies else None
    out.add("every job held by a killed collector was reclaimed in time", offenders,
            f"{held_total} held, reclaimed within {max(latencies, default=0):.1f} s "
            f"(lease {limits.lease:.0f} s)")


async def _zombies(conn: Conn, out: Outcome, rec: Record, tokens: dict[UUID, Trail]) -> None:
    offenders: list[str] = []
    for z in rec.zombies:
        if z.error or z.lease_token is None:
            offenders.append(f"{z.name}: {z.error or 'never frozen mid-request'}")
            continue
        trail = tokens.get(z.lease_token)
        kinds = [e for e, _, _ in trail.events] if trail else []
        if "lease_expired" not in kinds:
            offenders.append(f"{z.name}: its lease was never reclaimed ({kinds})")
        rejected = [n for e, _, n in (trail.events if trail else [])
                    if e == "stale_finalize_rejected"]
        if z.name not in rejected:
            offenders.append(f"{z.name}: no stale_finalize_rejected for its token ({kinds})")
        if any(k in ("succeeded", "failed") for k in kinds):
            offenders.append(f"{z.name}: its stale token committed an outcome ({kinds})")
        if trail and trail.ended_by in ("succeeded", "failed"):
            offenders.append(f"{z.name}: finalized before it was reclaimed ({kinds})")
    out.add("zombies: late finalize rejected, nothing committed", offenders,
            ", ".join(f"{z.name} job {z.job_id} {z.resource} frozen "
                      f"{(z.resumed_at or 0) - (z.frozen_at or 0):.1f} s"
                      for z in rec.zombies))


# ---------------------------------------------------------------- statistics


STATS_TABLES = (
    ("detailed", "detailed_stats_current"), ("detailed", "detailed_stats_history"),
    ("profile", "profile_current"), ("weapons", "soldier_weapon_stats"),
    ("weapons", "soldier_weapon_history"), ("vehicles", "soldier_vehicle_stats"),
    ("vehicles", "soldier_vehicle_history"))


async def _stats(conn: Conn, out: Outcome, rec: Record) -> None:
    out.add("sampled last-known-good stats never erased or moved backwards",
            rec.sample_errors, f"{rec.samples} samples")
    backwards = await _all(conn, f"""
        SELECT soldier_id, fetched_at, prev_at, col FROM (
            SELECT soldier_id, fetched_at, lag(fetched_at) OVER w AS prev_at,
                   ARRAY[{', '.join(COUNTERS)}] AS now_v,
                   lag(ARRAY[{', '.join(COUNTERS)}]) OVER w AS prev_v
            FROM detailed_stats_history WINDOW w AS (PARTITION BY soldier_id ORDER BY fetched_at)
        ) h, LATERAL generate_subscripts(now_v, 1) AS col
        WHERE prev_v IS NOT NULL AND now_v[col] < prev_v[col]
        ORDER BY 1, 2""")
    out.add("detailed history: counters never decrease in fetched_at order",
            [f"soldier {r['soldier_id']} {COUNTERS[r['col'] - 1]} at {r['fetched_at']}"
             for r in backwards])
    mismatch = await _all(conn, f"""
        SELECT c.soldier_id, c.fetched_at, h.fetched_at AS history_at
        FROM detailed_stats_current c
        JOIN LATERAL (SELECT * FROM detailed_stats_history x WHERE x.soldier_id = c.soldier_id
                      ORDER BY fetched_at DESC LIMIT 1) h ON true
        WHERE h.fetched_at > c.fetched_at
           OR ROW({', '.join('c.' + k for k in COUNTERS)})
              IS DISTINCT FROM ROW({', '.join('h.' + k for k in COUNTERS)})""")
    out.add("detailed current = its latest history values", [dict(r) for r in mismatch])
    # every stored snapshot was written by a committed success (a rejected zombie's write
    # would have no succeeded event at or just after its fetched_at)
    unattributed: list[str] = []
    for resource, table in STATS_TABLES:
        rows = await _all(conn, f"""
            SELECT DISTINCT t.soldier_id, t.fetched_at FROM {table} t
            WHERE NOT EXISTS (
                SELECT 1 FROM collection_events e
                WHERE e.soldier_id = t.soldier_id AND e.event_type = 'succeeded'
                  AND e.resource = %(resource)s
                  AND e.occurred_at BETWEEN t.fetched_at AND t.fetched_at + interval '30 s')
            LIMIT 20""", {"resource": resource})
        unattributed += [f"{table} soldier {r['soldier_id']} at {r['fetched_at']}" for r in rows]
    out.add("every stored snapshot belongs to a committed success", unattributed)


# ---------------------------------------------------------------- heartbeat transitions


Transitions = dict[UUID, list[tuple[str, float, str]]]


async def _heartbeats(conn: Conn, out: Outcome, rec: Record, limits: Limits) -> None:
    rows = await _all(conn, """
        SELECT collector_uuid, collector_name, event_type, occurred_at FROM collection_events
        WHERE event_type IN ('heartbeat_lost', 'heartbeat_restored') ORDER BY event_id""")
    seq: Transitions = defaultdict(list)
    for r in rows:
        seq[r["collector_uuid"]].append((r["event_type"], _ts(r["occurred_at"]),
                                         r["collector_name"]))
    alternation: list[str] = []
    for events in seq.values():
        prev = "heartbeat_restored"
        for kind, at, name in events:
            if kind == prev:
                alternation.append(f"{name}: two {kind} in a row (the second at "
                                   f"t+{at - rec.started:.1f} s)")
            prev = kind
    lost_n = sum(1 for r in rows if r["event_type"] == "heartbeat_lost")
    out.add("heartbeat_lost / heartbeat_restored alternate per collector", alternation,
            f"{lost_n} lost, {len(rows) - lost_n} restored")
    await _outages_closed(conn, out, rec, seq)
    _one_lost_per_outage(out, rec, seq, limits)


async def _outages_closed(conn: Conn, out: Outcome, rec: Record, seq: Transitions) -> None:
    """An outage ends with the collector's first good heartbeat: every collector that was back
    (it stopped gracefully afterwards, recording collector_stopped) closed its outage."""
    stopped: dict[UUID, list[float]] = defaultdict(list)
    for r in await _all(conn, "SELECT collector_uuid, occurred_at FROM collection_events "
                              "WHERE event_type = 'collector_stopped'"):
        stopped[r["collector_uuid"]].append(_ts(r["occurred_at"]))
    unclosed: list[str] = []
    for uuid, events in seq.items():
        for i, (kind, at, name) in enumerate(events):
            if kind != "heartbeat_lost":
                continue
            closed = i + 1 < len(events) and events[i + 1][0] == "heartbeat_restored"
            back = i + 1 < len(events) or any(s > at for s in stopped.get(uuid, []))
            if not closed and back:
                unclosed.append(f"{name}: heartbeat_lost at t+{at - rec.started:.1f} s never "
                                "followed by heartbeat_restored, though it came back")
    out.add("every outage a collector came back from ends with heartbeat_restored", unclosed)


def _one_lost_per_outage(out: Outcome, rec: Record, seq: Transitions, limits: Limits) -> None:
    spans: list[tuple[str, float, float, UUID | None]] = []
    pg = sorted(rec.outages())
    for i, (a, b) in enumerate(pg):  # until the next restart at the latest
        hi = min([b + limits.lost_after + 10] + [c - 1.5 for c, _ in pg[i + 1:i + 2]])
        spans.append(("PostgreSQL restart", a, hi, None))
    spans += [(f"kill of {k.name}", k.at, (k.restarted_at or rec.stopped) + 3, k.uuid)
              for k in rec.kills]
    spans += [(f"zombie {z.name}", z.frozen_at, (z.resumed_at or rec.stopped) + 3, z.uuid)
              for z in rec.zombies if z.frozen_at is not None]
    per_outage: list[str] = []
    for what, lo, hi, only in spans:
        for uuid, events in seq.items():
            if only is not None and uuid != only:
                continue
            lost = [name for kind, at, name in events
                    if kind == "heartbeat_lost" and lo - 1 <= at <= hi]
            if len(lost) > 1:
                per_outage.append(f"{lost[0]}: {len(lost)} heartbeat_lost during the {what}")
    out.add("at most one heartbeat_lost per outage", per_outage)


# ---------------------------------------------------------------- figures


async def _figures(conn: Conn, out: Outcome, rec: Record) -> None:
    counts = {r["event_type"]: r["n"] for r in await _all(
        conn, "SELECT event_type, count(*) AS n FROM collection_events GROUP BY 1")}
    f = out.figures
    f["succeeded"] = counts.get("succeeded", 0)
    f["failed"] = counts.get("failed", 0)
    f["retry_scheduled"] = counts.get("retry_scheduled", 0)
    f["unavailable"] = counts.get("unavailable", 0)
    f["reclaimed (all)"] = counts.get("reclaimed", 0)
    f["stale_finalize_rejected"] = counts.get("stale_finalize_rejected", 0)
    f["heartbeat_lost"] = counts.get("heartbeat_lost", 0)
    f["heartbeat_restored"] = counts.get("heartbeat_restored", 0)
    f["scheduler_started"] = counts.get("scheduler_started", 0)
    errors = {r["error_class"]: r["n"] for r in await _all(
        conn, "SELECT error_class, count(*) AS n FROM collection_events "
              "WHERE event_type = 'failed' GROUP BY 1")}
    f["failures by class"] = errors
    f["ledger rows"] = await _one(conn, "SELECT count(*) FROM request_ledger "
                                        "WHERE unsent_at IS NULL")
    f["ledger rows marked unsent (slot given up)"] = await _one(
        conn, "SELECT count(*) FROM request_ledger WHERE unsent_at IS NOT NULL")
    f["soldiers"] = await _one(conn, "SELECT count(*) FROM soldiers")
    f["coverage"] = {r["status"]: r["n"] for r in await _all(
        conn, "SELECT status, count(*) AS n FROM collection_state GROUP BY 1")}
    f["interactive requests"] = {r["status"]: r["n"] for r in await _all(
        conn, "SELECT status, count(*) AS n FROM interactive_requests GROUP BY 1")}
    waits = [r["s"] for r in await _all(
        conn, "SELECT extract(epoch FROM first_request_at - created_at)::float8 AS s "
              "FROM interactive_requests WHERE first_request_at IS NOT NULL ORDER BY 1")]
    if waits:
        f["interactive submission → first request (s): p50 / p90 / max"] = (
            f"{waits[len(waits) // 2]:.1f} / {waits[int(len(waits) * 0.9)]:.1f} / "
            f"{waits[-1]:.1f} ({len(waits)} requests)")
    sim: dict[str, Any] = rec.sim  # type: ignore[assignment]
    served = int(sim.get("requests_total", 0) or 0)
    ledger = int(f["ledger rows"] or 0)
    out.add("every request on the wire was counted in the ledger first",
            [f"ledger {ledger} < wire {served}"] if ledger < served else [],
            f"ledger {ledger} >= wire {served}")
    out.add("no internal (storage) failures",
            [f"{errors['internal']} internal failures"] if errors.get("internal") else [])
