"""No sends after a restore until the ledger is consistent again.

Restoring a backup rewinds request_ledger, so the budgets would allow again, within their
windows, requests that were already sent. Before each admission the collector asks the
database's restore guard (migration 0013), which notices a restore by the cluster's identity,
and tells it when its own last ledger row (kept in its data directory, beside the identity file)
is missing — a restore the identity does not show (a dump restored in place). While the guard
holds, nothing is claimed; the hold ends one budget window after the restore was noticed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one
from bf4ps.gates.admission import Slot

log = logging.getLogger(__name__)

# a collector's own row is looked for only while it could still count in a window
MARK_RELEVANT = timedelta(days=1)


def mark_file(data_dir: Path, name: str) -> Path:
    return data_dir / "collectors" / f"{name.lower()}.sent.json"


@dataclass
class RestoreGuard:
    path: Path
    last: Slot | None = None
    instance: str | None = None  # the database the mark was made in (restore_guard)
    held_until: datetime | None = None  # the hold last logged

    @classmethod
    def load(cls, data_dir: Path, name: str) -> RestoreGuard:
        path = mark_file(data_dir, name)
        guard = cls(path)
        try:
            raw: dict[str, Any] = json.loads(path.read_text())
            guard.last = Slot(datetime.fromisoformat(raw["slot_at"]), int(raw["request_id"]))
            guard.instance = raw.get("instance_id")
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable %s: %s", path, exc)
        return guard

    async def attach(self, conn: Conn) -> None:
        """At start: a mark made in another database (this data directory now serves a new
        one) says nothing about this database's ledger; it is dropped. A restored dump or
        backup carries its database's id, so its missing rows are still noticed."""
        row = await one(conn, "restore_instance")
        current = str(row["instance_id"]) if row else None
        if self.last is not None and self.instance != current:
            log.info("%s was made against another database: not compared", self.path.name)
            self.last = None
        self.instance = current

    def sent(self, slot: Slot) -> None:
        """Remember the newest ledger row this collector counted (written before the send)."""
        self.last = slot
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"request_id": slot.request_id, "slot_at": slot.at.isoformat(),
                                   "instance_id": self.instance}))
        tmp.replace(self.path)

    async def hold(self, conn: Conn) -> datetime | None:
        """Until when sends are held (None: not held)."""
        missing = await self._missing(conn)
        row = await one(conn, "restore_check", {"missing": missing})
        if row is None or row["hold_until"] is None or row["hold_until"] <= row["now"]:
            return None
        until: datetime = row["hold_until"]
        if until != self.held_until:
            log.warning("the database was restored (%s): no requests are sent until %s UTC, "
                        "when the budget windows no longer hold requests the restore forgot",
                        row["reason"], until.strftime("%Y-%m-%d %H:%M:%S"))
            self.held_until = until
        if missing is not None:  # reported once: the guard holds the fleet from here
            self.last = None
            self.path.unlink(missing_ok=True)
        return until

    async def _missing(self, conn: Conn) -> str | None:
        last = self.last
        if last is None or datetime.now(last.at.tzinfo) - last.at > MARK_RELEVANT:
            return None
        row = await one(conn, "ledger_has_request",
                                 {"request_id": last.request_id, "slot_at": last.at})
        if row is not None and row["present"]:
            return None
        return (f"this collector's request {last.request_id} counted at "
                f"{last.at:%Y-%m-%d %H:%M:%S} UTC is missing from request_ledger")
