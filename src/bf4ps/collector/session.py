"""A collector's logged-in Battlelog session (the account's `beaker.session.id`, one file per
egress: BF4PS_BATTLELOG_SESSION_FILE), used for every Battlelog request, searches and stats
alike, and re-read whenever the file changes.

A login wall (or a redirect to EA's login page) met while a session is configured is its own
signal, ``session_expired``: the session is dead, not Battlelog down. The collector stops
sending at once (no probing with a dead session: it claims nothing until the file changes),
the failed job is retried later like any login wall (never parked), a ``session_expired``
event names it (the console's cool-down table and the ``bf4ps_battlelog_session_expired``
gauge show it, an alert fires), and the others go on. A renewed file resumes it
(``session_renewed``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from bf4ps.battlelog.classify import LOGIN_REDIRECT
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.envelope import LOGIN_WALL
from bf4ps.battlelog.models import FetchResult
from bf4ps.db.connect import Conn
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.queue.jobs import CollectorRef
from bf4ps.settings import read_session_file

log = logging.getLogger(__name__)

SESSION_EXPIRED = "session_expired"
SESSION_RENEWED = "session_renewed"
_WALLS = frozenset({LOGIN_WALL, LOGIN_REDIRECT})

Stamp = tuple[int, int, int]  # the file's inode, size and modification time (ns)


class BattlelogSession:
    """The session file of this collector (None: anonymous) and whether its session died."""

    def __init__(self, path: Path | None, client: BattlelogClient) -> None:
        self.path = path
        self.client = client
        self.expired = False
        self._stamp: Stamp | None = None

    @property
    def configured(self) -> bool:
        return self.path is not None

    def load(self) -> None:
        """Read the file at start and use its session (a bad file is a clear error)."""
        if self.path is None:
            return
        self._stamp = self._stat()
        self.client.use_session(read_session_file(self.path))
        log.info("Battlelog requests use the session from %s", self.path)

    def renewed(self) -> bool:
        """Has the file changed since it was read? Then its session is used from now on. A file
        caught half-written (unreadable, too short) is tried again next time."""
        if self.path is None:
            return False
        stamp = self._stat()
        if stamp is None or stamp == self._stamp:
            return False
        try:
            self.client.use_session(read_session_file(self.path))
        except ValueError as exc:
            log.warning("the session file changed but holds no session yet: %s", exc)
            return False
        self._stamp = stamp
        log.info("the Battlelog session file %s changed: its session is used now", self.path)
        return True

    def kills(self, result: FetchResult) -> bool:
        """Does this answer say the configured session is dead (a login wall or a redirect to
        the login page while a session is configured)?"""
        return self.configured and result.details.get("signal") in _WALLS

    def _stat(self) -> Stamp | None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns


async def expired(conn: Conn, me: CollectorRef, session: BattlelogSession,
                  result: FetchResult, resource: str) -> None:
    """The session died: this collector stops sending; the event says so (once)."""
    if session.expired:
        return
    session.expired = True
    log.error("the Battlelog session in %s has expired (a login wall): nothing is sent from "
              "this collector until the file is renewed", session.path)
    async with conn.transaction():
        await events.record(conn, EventType.SESSION_EXPIRED, http_status=result.http_status,
                            result=SESSION_EXPIRED, resource=resource,
                            error_class=result.error_class.value if result.error_class
                            else None, **me.event_fields(),
                            details={"signal": SESSION_EXPIRED,
                                     "until": "the session file is renewed",
                                     "session_file": str(session.path)})


async def stopped(conn: Conn, me: CollectorRef, session: BattlelogSession | None) -> bool:
    """Does a dead session stop this collector now? A renewed file resumes it (an event)."""
    if session is None or not session.configured:
        return False
    if session.renewed() and session.expired:
        session.expired = False
        async with conn.transaction():
            await events.record(conn, EventType.SESSION_RENEWED, result=SESSION_RENEWED,
                                **me.event_fields(), details={"signal": SESSION_RENEWED})
    return session.expired
