"""Answers through the real finalize path, as a collector stores them (stats/checked.py), and
the real Battlelog captures they start from: for the plausibility tests of several tiers.

The captures are read from beside the repository through tests/captures.py, the one place that
says where.
"""

from __future__ import annotations

import dataclasses

from bf4ps.battlelog.classify import apply_parser, resource_parser
from bf4ps.battlelog.models import FetchResult, Parsed
from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass, Resource
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import ClaimedJob, CollectorRef, Outcome
from bf4ps.stats import archive, plausible
from bf4ps.stats.checked import checked_writer
from tests import captures
from tests.helpers import add_job

# one real capture of each resource (the 2013 soldier; the overview is an Xbox 360 one)
CAPTURES = {
    Resource.DETAILED: "2013-bf4intel/details-stats.json",
    Resource.PROFILE: "2013-bf4intel/soldieroverview.json",
    Resource.WEAPONS: "2013-bf4intel/weapon-stats.json",
    Resource.VEHICLES: "2013-bf4intel/vehicles-stats.json",
}
Changes = dict[str, int | float | None]


def capture(name: str) -> bytes:
    """A capture's bytes (tests/captures.py says where they are); the test, or the module that
    reads it when imported, skips naming the folder when the captures are absent."""
    captures.skip_module_without()
    return captures.read(name)


def parsed_capture(resource: Resource, name: str | None = None) -> Parsed:
    body = capture(name or CAPTURES[resource])
    result = apply_parser(FetchResult(resource, 200, 0.0, len(body)), body,
                          resource_parser(resource))
    assert result.ok and result.parsed is not None, result.message
    return result.parsed


def perturbed(parsed: Parsed, changes: Changes) -> Parsed:
    """`parsed` with the counters named `field` or `guid:field` set to the given values."""
    if not isinstance(parsed, tuple):
        return dataclasses.replace(parsed, **changes)  # type: ignore[arg-type]
    items = []
    for item in parsed:
        mine = {key.split(":", 1)[1]: value for key, value in changes.items()
                if key.split(":", 1)[0] == getattr(item, "guid", None)}
        items.append(dataclasses.replace(item, **mine) if mine else item)
    return tuple(items)  # type: ignore[return-value]


async def collect(conn: Conn, me: CollectorRef, soldier_id: int, resource: Resource,
                  parsed: Parsed, policy: Policy,
                  raw: archive.RawAnswer | None = None) -> Outcome:
    """One collection of `parsed` through the fenced finalize path, as a collector does it
    (collector/judged.py for a refused answer)."""
    await add_job(conn, soldier_id, resource.value)
    await conn.execute("UPDATE collection_jobs SET eligible_at = now() "  # its retry: due now
                       "WHERE soldier_id = %(s)s", {"s": soldier_id})
    job = await qclaim.claim(conn, me, 60)
    assert job is not None
    async with conn.transaction():
        assert await qclaim.start(conn, job, 60, job.claimed_at) is not None
    try:
        return await finalize.succeed(conn, me, job, Attempt(200, 5), policy,
                                      checked_writer(me, resource, parsed, policy, raw))
    except plausible.Implausible as exc:
        return await _refused(conn, me, job, exc.verdict, policy)


async def _refused(conn: Conn, me: CollectorRef, job: ClaimedJob, verdict: plausible.Verdict,
                   policy: Policy) -> Outcome:
    outcome = await finalize.fail(conn, me, job, ErrorClass.IMPLAUSIBLE, verdict.message,
                                  Attempt(200, 5, verdict.details()), policy)
    assert job.soldier_id is not None
    await plausible.record_suspect(conn, job, verdict)
    return outcome
