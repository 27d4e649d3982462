"""TEST-ONLY: pause a collector at a named point, so a fault test can freeze it (SIGSTOP) or cut
its network exactly there. Off unless BF4PS_TEST_PAUSE_AT names points (never set it in
production). At the first passage of a named point the collector writes
BF4PS_TEST_PAUSE_DIR/<point>.ready and waits until the test creates <point>.go.

Points: `admission` (a job claimed, its request not yet counted: between the two admission
calls), `fetch` (the slot counted and the job started, the request about to be written),
`finalize` (the answer in hand, before its fenced finalize)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from bf4ps.settings import Settings

POINTS = frozenset({"admission", "fetch", "finalize"})


@dataclass
class PausePoints:
    folder: Path | None = None
    pending: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, settings: Settings) -> PausePoints:
        wanted = {p.strip() for p in (settings.test_pause_at or "").split(",") if p.strip()}
        if not wanted or settings.test_pause_dir is None:
            return cls()
        unknown = wanted - POINTS
        if unknown:
            raise ValueError(f"unknown pause points {sorted(unknown)}; known: {sorted(POINTS)}")
        return cls(settings.test_pause_dir, wanted)

    async def __call__(self, point: str) -> None:
        if self.folder is None or point not in self.pending:
            return
        self.pending.discard(point)
        (self.folder / f"{point}.ready").write_text(str(os.getpid()))
        go = self.folder / f"{point}.go"
        while not go.exists():
            await asyncio.sleep(0.02)
