"""Is an answer plausible against what BF4PS already knows? Lifetime counters never go down.

Checked in the finalize transaction, before the statistics are written (checked.py): an
answer with a lifetime counter lower than the stored one (a null where a value is stored counts
as lower) is IMPLAUSIBLE: nothing is written, the job is retried with backoff,
never parked; unless it is a genuine stats reset: once ``reset_confirmations`` agreeing answers
(answer_suspects) spanned ``reset_min_span_seconds``, it is stored with a ``stats_reset``
event. A first answer of all zeros is stored but flagged (``unconfirmed_zero``) until a second
agrees (docs/battlelog.md, "Plausibility"). Counters: counters.py's, derived from the models;
per weapon and vehicle as ``guid:field`` (an unlisted item is not compared).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb

from bf4ps.battlelog.models import DetailedStats, Parsed, ProfileStats, VehicleItem, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, execute, mapped, one
from bf4ps.domain import Resource
from bf4ps.policy import Policy
from bf4ps.queue.jobs import ClaimedJob
from bf4ps.stats.counters import COUNTERS

__all__ = ["COUNTERS", "Accepted", "Implausible", "Verdict", "judge", "record_suspect"]

Counters = dict[str, int | float | None]

_STORED = {Resource.DETAILED: "plausible_detailed_stored",
           Resource.PROFILE: "plausible_profile_stored",
           Resource.WEAPONS: "plausible_weapons_stored",
           Resource.VEHICLES: "plausible_vehicles_stored"}
LOWER = "lower"
UNCONFIRMED_ZERO = "unconfirmed_zero"
MAX_NAMED = 12  # counters named in a message / event


def counters_of(resource: Resource, parsed: Parsed) -> Counters:
    """The lifetime counters of a parsed answer (see COUNTERS)."""
    fields = COUNTERS[Resource(resource)]
    if isinstance(parsed, DetailedStats | ProfileStats):
        return {name: getattr(parsed, name) for name in fields}
    out: Counters = {}
    if isinstance(parsed, tuple):
        for item in parsed:
            if isinstance(item, WeaponItem | VehicleItem):
                for name in fields:
                    out[f"{item.guid}:{name}"] = getattr(item, name)
    return out


def lowered(new: Counters, stored: Counters) -> list[str]:
    """The counters the answer has lower than stored (null where a value is stored), in the
    stored order (the model's: the headline counters first)."""
    out = []
    for key, old in stored.items():
        if old is None or key not in new:
            continue
        value = new[key]
        if value is None or value < old:
            out.append(key)
    return out


def all_zero(counters: Counters) -> bool:
    return bool(counters) and all(not value for value in counters.values())


def agrees(new: Counters, before: Counters) -> bool:
    """Does this answer agree with the previous suspect one (nothing lower than in it)?"""
    return not lowered(new, before)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why an answer is implausible (for the failure's message, event and suspect row)."""

    lowered: tuple[str, ...]
    stored: Counters
    counters: Counters
    zeros: bool

    @property
    def message(self) -> str:
        what = "an all-zero answer" if self.zeros else "lifetime counters went down"
        named = ", ".join(f"{k} {self.stored[k]} -> {self.counters.get(k)}"
                          for k in self.lowered[:3])
        more = f" (+{len(self.lowered) - 3} more)" if len(self.lowered) > 3 else ""
        return f"implausible: {what} for a soldier with history: {named}{more}"

    def details(self) -> dict[str, object]:  # the event's details (JSON)
        named = self.lowered[:MAX_NAMED]
        return {"lowered": len(self.lowered), "zeros": int(self.zeros),
                "was": {k: self.stored[k] for k in named},
                "now": {k: self.counters.get(k) for k in named}}


class Implausible(Exception):
    """Raised inside the finalize transaction: nothing of the answer is written."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


@dataclass(frozen=True, slots=True)
class Accepted:
    """A plausible answer: what to record beside storing it."""

    reset: Verdict | None = None  # a confirmed stats reset (the old values)
    unconfirmed: bool = False  # a first answer of zeros, flagged


class _Suspect(NamedTuple):
    """A soldier's run of suspect answers for one resource (answer_suspects)."""

    kind: str
    first_at: datetime
    answers: int
    counters: Counters


async def stored_counters(conn: Conn, resource: Resource, soldier_id: int) -> Counters | None:
    """The stored counters (None: nothing stored yet)."""
    resource = Resource(resource)
    fields = COUNTERS[resource]
    params = {"soldier_id": soldier_id}
    if resource in (Resource.DETAILED, Resource.PROFILE):
        return await one(conn, mapped(partial(_counters, fields)), _STORED[resource], params)
    rows = await all_rows(conn, mapped(partial(_item_counters, fields)), _STORED[resource],
                          params)
    return {k: v for r in rows for k, v in r.items()} if rows else None


def _counters(fields: tuple[str, ...], row: Mapping[str, Any]) -> Counters:
    """A stored row's counters."""
    return {name: row[name] for name in fields}


def _item_counters(fields: tuple[str, ...], row: Mapping[str, Any]) -> Counters:
    """A stored item's counters, each named `guid:counter`."""
    return {f"{row['guid']}:{name}": row[name] for name in fields}


async def judge(conn: Conn, job: ClaimedJob, resource: Resource, parsed: Parsed,
                now: datetime, policy: Policy) -> Accepted:
    """Accept the answer of `job` (whose lease the caller holds), or raise Implausible
    (nothing written but the suspect's run, which the caller records after the failure:
    record_suspect)."""
    assert job.soldier_id is not None
    new = counters_of(resource, parsed)
    stored = await stored_counters(conn, resource, job.soldier_id)
    key = {"soldier_id": job.soldier_id, "resource": Resource(resource).value}
    lease = {"job_id": job.job_id, "lease_token": job.lease.lease_token}
    suspect = await one(conn, _Suspect, "suspect_of", key)
    if stored is None:
        if all_zero(new):
            await execute(conn, "suspect_note", lease | {
                "kind": UNCONFIRMED_ZERO, "extend": False, "counters": Jsonb(new),
                "clear": False})
            return Accepted(unconfirmed=True)
        return Accepted()
    down = lowered(new, stored)
    if not down:
        if suspect is not None:  # a plausible answer ends a suspicion, and confirms zeros
            await execute(conn, "suspect_note", lease | _CLEAR)
        return Accepted()
    verdict = Verdict(tuple(down), stored, new, all_zero(new))
    if suspect is not None and _confirms_reset(suspect, new, now, policy):
        await execute(conn, "suspect_note", lease | _CLEAR)
        return Accepted(reset=verdict)
    raise Implausible(verdict)


_CLEAR = {"kind": LOWER, "extend": False, "counters": None, "clear": True}


def _confirms_reset(suspect: _Suspect, new: Counters, now: datetime,
                    policy: Policy) -> bool:
    """This answer is the ``reset_confirmations``-th of a run of agreeing ones spanning at
    least ``reset_min_span_seconds``."""
    if suspect.kind != LOWER or not agrees(new, dict(suspect.counters)):
        return False
    span = (now - suspect.first_at).total_seconds()
    return (suspect.answers + 1 >= policy.reset_confirmations
            and span >= policy.reset_min_span_seconds)


async def record_suspect(conn: Conn, job: ClaimedJob, verdict: Verdict) -> int:
    """After an implausible answer's failure (of `job`'s lease, which just failed): extend the
    run of agreeing suspect answers (or start a new one when this one disagrees with it); how
    many the run has now (0: the database wrote nothing, the lease not the caller's). The
    database grows a run by at most one answer a lease (bf4ps_suspect_note)."""
    assert job.soldier_id is not None
    key = {"soldier_id": job.soldier_id, "resource": job.resource}
    suspect = await one(conn, _Suspect, "suspect_of", key)
    extend = (suspect is not None and suspect.kind == LOWER
              and agrees(verdict.counters, dict(suspect.counters)))
    row = await one(conn, _Answers, "suspect_note", {
        "job_id": job.job_id, "lease_token": job.lease.lease_token, "kind": LOWER,
        "extend": extend, "counters": Jsonb(verdict.counters), "clear": False})
    return row.answers if row is not None else 0


class _Answers(NamedTuple):
    answers: int
