"""No sends after a restore until the ledger is consistent again.

Restoring a backup rewinds request_ledger, so the budgets would allow again requests already
sent. Before each admission the collector asks the database's restore guard
(bf4ps_restore_check in db/schema.sql), which notices a restore from the database and the
fleet's running processes, never from a file alone: the cluster's identity, this database's oid
and request_ledger's table oid against the guard row's, and the signed mark the previous check
handed this collector, which a rewound database no longer reaches. A server start no running
process vouched for is held one window. The signed receipt of the newest ledger row it was
counted in is a second signal (BF4PS_RESTORE_RECEIPT_FILE). While the guard holds nothing is
claimed (docs/architecture.md "The restore guard").
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from psycopg.pq import TransactionStatus

from bf4ps.db.connect import Conn
from bf4ps.gates.restore import Marks, Receipt, current_hold, receipt

log = logging.getLogger(__name__)


def receipt_file(data_dir: Path, name: str) -> Path:
    return data_dir / "collectors" / f"{name.lower()}.receipt.json"


def _load(path: Path | None) -> Receipt | None:
    """The receipt a previous process of this collector kept (a restart after a failure, as
    systemd's Restart=on-failure makes one), or None: none, or unreadable."""
    if path is None or not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        return Receipt(int(raw["request_id"]), datetime.fromisoformat(raw["slot_at"]),
                       str(raw["receipt"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep(path: Path | None, seen: Receipt) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"request_id": seen.request_id,
                               "slot_at": seen.slot_at.isoformat(), "receipt": seen.receipt}))
    os.replace(tmp, path)


@dataclass
class RestoreGuard:
    """`path`: where the newest receipt is kept across this collector's own restarts (a
    collector whose job vanished in a restore exits and is restarted: it still shows it)."""

    path: Path | None = None
    held_until: datetime | None = None  # the hold last logged
    marks: Marks = field(default_factory=Marks)  # shown at every check

    def __post_init__(self) -> None:
        self.marks.seen = _load(self.path)

    async def saw(self, conn: Conn, request_id: int) -> None:
        """Keep the receipt of a ledger row just committed for this collector (outside any
        transaction: a row that could still roll back is never shown as lost)."""
        if conn.info.transaction_status != TransactionStatus.IDLE:
            return
        if self.marks.seen is not None and request_id <= self.marks.seen.request_id:
            return
        got = await receipt(conn, request_id)
        if got is not None:
            self.marks.seen = got
            _keep(self.path, got)

    async def hold(self, conn: Conn) -> datetime | None:
        """Until when sends are held (None: not held); a new hold is logged once."""
        held = await current_hold(conn, self.marks)
        if held is None:
            return None
        if held.until != self.held_until:
            log.warning("the database was restored (%s): no requests are sent until %s UTC, "
                        "when the budget windows no longer hold requests the restore forgot",
                        held.reason, held.until.strftime("%Y-%m-%d %H:%M:%S"))
            self.held_until = held.until
        return held.until
