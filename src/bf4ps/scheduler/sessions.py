"""Play sessions from BF4SW's sightings, and their refreshes (docs/architecture.md).

* Observe (each intake batch): a soldier sighted within the session gap of BF4SW's now is on a
  server; his open session is extended (same server, within the gap) or closed and a new one
  opened. A sighting read again changes nothing.
* Close (after each reconciliation): sessions unseen for the gap end at their last sighting;
  a soldier off every server has them closed, each resource due once (final_refresh) after
  the policy's minimum play for it, unless a success after the last sighting brackets it.
* Defer: a soldier on a server is not marked due for staleness until his session closes.
* Sweep: long sessions get an active refresh of detailed each session_refresh_seconds; stale
  known profiles become due (scheduled_profile), a bounded batch at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute, scalar
from bf4ps.policy import Policy
from bf4ps.scheduler.intake_source import Server
from bf4ps.scheduler.intake_store import Stored

ServerKey = tuple[str, int]  # (BF4PS platform, persona id)


def playing(stored: Sequence[Stored], servers: dict[ServerKey, Server],
            source_now: datetime, policy: Policy) -> list[tuple[int, datetime, Server | None]]:
    """The soldiers of a batch on a server now: (soldier id, latest sighting, server). A
    server row older than the gap before the sighting belongs to an earlier one: unknown."""
    gap = timedelta(seconds=policy.session_gap_seconds)
    out = []
    for s in stored:
        seen = s.identity.last_seen
        if seen < source_now - gap:
            continue
        server = servers.get((s.identity.platform.value, s.identity.persona_id))
        if server is not None and server.seen_at < seen - gap:
            server = None
        out.append((s.soldier_id, seen, server))
    return out


async def observe(conn: Conn, sightings: list[tuple[int, datetime, Server | None]],
                  policy: Policy) -> int:
    """Record the sightings (see the module docstring); the number of sessions opened."""
    if not sightings:
        return 0
    return int(await scalar(conn, "sessions_observe", {
        "soldier_ids": [sid for sid, _, _ in sightings],
        "seen": [seen for _, seen, _ in sightings],
        "guids": [srv.guid if srv else None for _, _, srv in sightings],
        "names": [srv.name if srv else None for _, _, srv in sightings],
        "gap_seconds": policy.session_gap_seconds}))


async def close(conn: Conn, source_now: datetime, policy: Policy) -> int:
    """End the sessions unseen for the gap and make their final refreshes; how many."""
    return int(await scalar(conn, "sessions_close", {
        "source_now": source_now, "gap_seconds": policy.session_gap_seconds}))


async def sweep(conn: Conn, policy: Policy) -> tuple[int, int]:
    """(detailed made due for long sessions, profiles made due by the slow cadence)."""
    active = await execute(conn, "sessions_active_refresh",
                           {"refresh_seconds": policy.session_refresh_seconds})
    scheduled = 0
    if policy.scheduled_profile_seconds > 0:
        scheduled = await execute(conn, "sessions_scheduled_profile", {
            "interval_seconds": policy.scheduled_profile_seconds,
            "n": policy.scheduled_profile_batch})
    return active, scheduled
