"""The job a collector holds, as one value with its phase: written by the work loop (work.py),
read by the heartbeat (which renews a served job's lease and tells a lost lease before the send
from one after it) and by the runner (which lets a held job go when the loop stops).

    CHAINED ─(admitted)─> COUNTED ─(started at its slot)─> SENT ─(finalize)─> FINISHING
       ^                     └──────────(given up before the send)─────────────┘
       └── claimed by the last success's own transaction, its request counted in `slot` or
           not yet (slot None)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from bf4ps.gates.admission import Slot
from bf4ps.queue.jobs import ClaimedJob


class Phase(StrEnum):
    CHAINED = "chained"  # claimed by the last success; not served yet
    COUNTED = "counted"  # served: its request counted in a slot, not begun
    SENT = "sent"  # its request begun: running (a lost lease stops the collector after it)
    FINISHING = "finishing"  # its finalize (or give-up) begun: the fence reports the lease


SERVED = (Phase.COUNTED, Phase.SENT, Phase.FINISHING)


@dataclass(frozen=True, slots=True)
class Held:
    job: ClaimedJob
    phase: Phase
    slot: Slot | None = None  # the slot its request is counted in (None: not counted yet)


class Holding:
    """The one place the held job lives: at most one job at a time (a success that claims
    the next job ends the lease of the one it finished)."""

    def __init__(self) -> None:
        self.held: Held | None = None

    def hold(self, job: ClaimedJob, phase: Phase, slot: Slot | None = None) -> None:
        self.held = Held(job, phase, slot)

    def advance(self, job: ClaimedJob, phase: Phase) -> None:
        """`job` moves on to `phase` (nothing when another job is held meanwhile)."""
        if self.held is not None and self.held.job is job:
            self.held = replace(self.held, phase=phase)

    def served(self) -> Held | None:
        """The job being served (its lease the heartbeat renews), if any."""
        return self.held if self.held is not None and self.held.phase in SERVED else None

    def drop(self, job: ClaimedJob) -> None:
        """`job` is done with (nothing when a chained job is held instead)."""
        if self.held is not None and self.held.job is job:
            self.held = None

    def take(self) -> Held | None:
        held, self.held = self.held, None
        return held
