"""A soldier's last play session (scheduler/sessions.py) and what it brought: where, when, how
long, and the detailed snapshots that bracket it (before its start, after its last sighting)
with the kills, deaths, score and time gained between them.

`closing` is "collected", "pending" (ended, its closing snapshot queued or due), "unscheduled"
(ended, no detailed collection queued: the policy's final refresh skipped it) or "playing";
`before_in_session`: no snapshot before the session, so the first one during it opens the
bracket; `earlier_sessions`: sessions between the snapshot before and this one's start, whose
gains are included; `clean` is False when the closing snapshot came after the next session
began or earlier sessions are included. A difference that went down (a stats reset) is no
gain: the gains are None and `reset` is True.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, mapped, one
from bf4ps.views.soldier import Model, Soldier, ratio

Closing = Literal["collected", "pending", "unscheduled", "playing"]


class SessionSnapshot(Model):
    collected_at: datetime
    kills: int | None
    deaths: int | None
    score: int | None
    time_seconds: int | None


class SessionGains(Model):
    kills: int | None
    deaths: int | None
    score: int | None
    time_seconds: int | None
    kd: float | None  # over the session
    score_per_minute: float | None


class PlaySession(Model):
    server_name: str | None  # None: BF4SW did not say where
    server_guid: str | None
    started_at: datetime  # first sighting
    last_seen_at: datetime  # last sighting: the end once closed
    duration_seconds: int
    sightings: int
    closing: Closing
    before: SessionSnapshot | None
    before_in_session: bool
    after: SessionSnapshot | None
    gains: SessionGains | None
    reset: bool
    earlier_sessions: int
    clean: bool


class LastSession(Model):
    soldier: Soldier
    session: PlaySession | None  # None: never seen playing since BF4PS keeps sessions


def _snap(row: Mapping[str, Any], side: str) -> SessionSnapshot | None:
    at = row[f"{side}_at"]
    if at is None:
        return None
    return SessionSnapshot(collected_at=at, kills=row[f"{side}_kills"],
                           deaths=row[f"{side}_deaths"], score=row[f"{side}_score"],
                           time_seconds=row[f"{side}_time"])


def _diff(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else b - a


def gains(before: SessionSnapshot, after: SessionSnapshot) -> SessionGains | None:
    """after - before; None when a counter went down (a reset: no gain to show)."""
    d = {k: _diff(getattr(before, k), getattr(after, k))
         for k in ("kills", "deaths", "score", "time_seconds")}
    if any(v is not None and v < 0 for v in d.values()):
        return None
    minutes = (d["time_seconds"] or 0) / 60
    return SessionGains(**d, kd=ratio(d["kills"], d["deaths"]),
                        score_per_minute=round(d["score"] / minutes, 1)
                        if d["score"] is not None and minutes else None)


def session_from(row: Mapping[str, Any]) -> PlaySession:
    before, after = _snap(row, "before"), _snap(row, "after")
    ended = row["ended_at"] is not None
    if not ended:
        closing: Closing = "playing"
    elif after is not None or row["collected_after_at"] is not None:
        closing = "collected"
    elif row["closing_scheduled"]:
        closing = "pending"
    else:
        closing = "unscheduled"
    if closing == "collected" and after is None and before is not None:
        after = before.model_copy(update={"collected_at": row["collected_after_at"]})
    gained = gains(before, after) if before is not None and after is not None else None
    nxt = row["next_started_at"]
    earlier = int(row["sessions_before"] or 0) if before is not None else 0
    return PlaySession(
        server_name=row["server_name"], server_guid=row["server_guid"],
        started_at=row["started_at"], last_seen_at=row["last_seen_at"],
        duration_seconds=round((row["last_seen_at"] - row["started_at"]).total_seconds()),
        sightings=row["sightings"], closing=closing, before=before,
        before_in_session=before is not None and before.collected_at > row["started_at"],
        after=after, gains=gained,
        reset=before is not None and after is not None and gained is None,
        earlier_sessions=earlier,
        clean=earlier == 0 and (after is None or nxt is None or after.collected_at <= nxt))


def read(soldier_id: int) -> Read[PlaySession]:
    """The last session's read (for db.queries.batch): its row as the session."""
    return Read(mapped(session_from), "last_session_of", {"soldier_id": soldier_id})


async def last_session(conn: Conn, s: Soldier) -> LastSession:
    return LastSession(soldier=s, session=await one(
        conn, mapped(session_from), "last_session_of", {"soldier_id": s.soldier_id}))
