"""The restore guard's hold (bf4ps_restore_check, migrations 0013 and 0018): after a restore
rewound request_ledger, nothing is sent — by a collector, `bf4ps battlelog fetch` or
`bf4ps recon` — until the budget windows no longer hold requests the restore forgot. The
guard notices a restore from the database alone (docs/architecture.md "The restore guard")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one


@dataclass(frozen=True)
class Hold:
    until: datetime
    reason: str


async def current_hold(conn: Conn) -> Hold | None:
    """The restore guard's hold now (None: not held)."""
    row = await one(conn, "restore_check")
    if row is None or row["hold_until"] is None or row["hold_until"] <= row["now"]:
        return None
    return Hold(row["hold_until"], str(row["reason"] or "unknown"))
