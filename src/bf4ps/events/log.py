"""Event types of the append-only collection_events log, and the one way to write an event."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute


class EventType(StrEnum):
    # job lifecycle
    CREATED = "created"
    PROMOTED = "promoted"
    CLAIMED = "claimed"
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY_SCHEDULED = "retry_scheduled"
    UNAVAILABLE = "unavailable"
    RELEASED = "released"
    LEASE_EXPIRED = "lease_expired"
    RECLAIMED = "reclaimed"
    STALE_FINALIZE_REJECTED = "stale_finalize_rejected"
    LOOKUP_RESOLVED = "lookup_resolved"
    # collector health and lifecycle
    HEARTBEAT_LOST = "heartbeat_lost"
    HEARTBEAT_RESTORED = "heartbeat_restored"
    COLLECTOR_REGISTERED = "collector_registered"
    COLLECTOR_STARTED = "collector_started"
    COLLECTOR_STOPPED = "collector_stopped"
    COLLECTOR_DRAINED = "collector_drained"
    COLLECTOR_RESUMED = "collector_resumed"
    COLLECTOR_DISABLED = "collector_disabled"
    COLLECTOR_RETIRED = "collector_retired"
    # clocks: a collector beyond its clock-skew bound takes no send slots (collector/clock.py)
    CLOCK_SKEW = "clock_skew"
    CLOCK_RESTORED = "clock_restored"
    # rate gates
    EGRESS_THROTTLED = "egress_throttled"
    EGRESS_RECOVERED = "egress_recovered"
    # an outage answer (5xx, a redirect, an error page ...) cooled the egress, for its
    # Retry-After when it gave one (collector/outage.py)
    EGRESS_COOLED = "egress_cooled"
    # a collector's logged-in Battlelog session met a login wall: it sends nothing until its
    # session file is renewed, which resumes it (collector/session.py)
    SESSION_EXPIRED = "session_expired"
    SESSION_RENEWED = "session_renewed"
    # plausibility (stats/plausible.py): a confirmed Battlelog stats reset (the old values in
    # details), a first answer of all zeros stored but unconfirmed
    STATS_RESET = "stats_reset"
    STATS_UNCONFIRMED = "stats_unconfirmed"
    # fleet circuit breaker
    CIRCUIT_OPENED = "circuit_opened"
    CIRCUIT_PROBE = "circuit_probe"
    CIRCUIT_CLOSED = "circuit_closed"
    # reconnaissance
    RECON_FINISHED = "recon_finished"
    # fleet settings (fleet/conf.py): an operator's change, or a seed of a value never
    # configured; a collector whose environment says otherwise (its values are not used)
    FLEET_SETTINGS_CHANGED = "fleet_settings_changed"
    SETTINGS_MISMATCH = "settings_mismatch"
    # progress (stats/progress_check.py): an interval over the policy ceilings, checked after
    # storage; an operator's clear (`bf4ps flags clear`, the console) puts its soldier back
    PROGRESS_FLAGGED = "progress_flagged"
    PROGRESS_FLAG_CLEARED = "progress_flag_cleared"
    # scheduler
    RECHECK_SCHEDULED = "recheck_scheduled"
    SCHEDULER_STARTED = "scheduler_started"
    SCHEDULER_STOPPED = "scheduler_stopped"


EVENT_TYPE_NAMES = tuple(sorted(e.value for e in EventType))  # for filters: CLI, website, API

# The table's writable columns but event_type and details (record()'s own arguments); a test
# (tests/db/test_event_columns.py) keeps this, insert_event and every INSERT INTO
# collection_events of the named queries and the migrations' functions in step with the table.
EVENT_COLUMNS = (
    "collector_uuid", "collector_name", "hostname", "egress_key", "lane", "job_id",
    "lease_token", "soldier_id", "persona_id", "platform", "resource", "priority_class",
    "attempt_number", "result", "duration_ms", "wait_ms", "http_status", "error_class",
    "error_message", "claimed_at", "started_at",
)


def _short(message: str | None) -> str | None:
    if message is None:
        return None
    return message if len(message) <= 500 else message[:497] + "..."


async def record(
    conn: Conn,
    event_type: EventType,
    *,
    details: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    """Insert one event inside the caller's transaction (so it commits with the change)."""
    unknown = set(fields) - set(EVENT_COLUMNS)
    if unknown:
        raise TypeError(f"unknown event fields: {sorted(unknown)}")
    params: dict[str, Any] = dict.fromkeys(EVENT_COLUMNS)
    params.update(fields)
    params["error_message"] = _short(params["error_message"])
    params["event_type"] = event_type.value
    params["details"] = Jsonb(details) if details else None
    await execute(conn, "insert_event", params)
