"""No sends after a restore until the ledger is consistent again.

Restoring a backup rewinds request_ledger, so the budgets would allow again, within their
windows, requests that were already sent. Before each admission the collector asks the
database's restore guard (bf4ps_restore_check, migrations 0013 and 0018), which notices a
restore from the database alone — the cluster's identity (system identifier, timeline), this
database's oid, and request_ledger's own table oid (a dump restored in place with
`pg_restore --clean` re-creates the table) against the ones the guard row recorded — so a
collector whose data directory was lost or restored with the rest holds all the same. While
the guard holds, nothing is claimed; the hold ends one budget window after the restore was
noticed (docs/architecture.md "The restore guard").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from bf4ps.db.connect import Conn
from bf4ps.gates.restore import current_hold

log = logging.getLogger(__name__)


@dataclass
class RestoreGuard:
    held_until: datetime | None = None  # the hold last logged

    async def hold(self, conn: Conn) -> datetime | None:
        """Until when sends are held (None: not held); a new hold is logged once."""
        held = await current_hold(conn)
        if held is None:
            return None
        if held.until != self.held_until:
            log.warning("the database was restored (%s): no requests are sent until %s UTC, "
                        "when the budget windows no longer hold requests the restore forgot",
                        held.reason, held.until.strftime("%Y-%m-%d %H:%M:%S"))
            self.held_until = held.until
        return held.until
