"""What the chaos run did and saw, as the invariant checks need it (wall-clock epoch seconds,
the same clock PostgreSQL's clock_timestamp() reads on this machine)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from uuid import UUID


@dataclass
class Kill:
    name: str
    uuid: UUID | None
    at: float
    restarted_at: float | None = None


@dataclass
class SchedulerKill:
    at: float
    restarted_at: float | None = None


@dataclass
class PgRestart:
    began: float
    ended: float | None = None


@dataclass
class Zombie:
    name: str
    uuid: UUID | None
    planned_at: float
    frozen_at: float | None = None  # SIGSTOP that held (mid-request, no transaction open)
    resumed_at: float | None = None  # SIGCONT
    job_id: int | None = None
    lease_token: UUID | None = None
    soldier_id: int | None = None
    resource: str | None = None
    freeze_attempts: int = 0  # SIGSTOPs tried (the others landed at a bad moment: resumed)
    reclaimed_while_frozen: bool = False
    error: str | None = None


@dataclass
class Record:
    started: float = 0.0  # chaos phase start
    chaos_ended: float = 0.0
    stopped: float = 0.0
    kills: list[Kill] = field(default_factory=list)
    scheduler_kills: list[SchedulerKill] = field(default_factory=list)
    pg_restarts: list[PgRestart] = field(default_factory=list)
    zombies: list[Zombie] = field(default_factory=list)
    submissions: Counter[str] = field(default_factory=Counter)
    bf4sw_restarts: int = 0
    unexpected_exits: list[str] = field(default_factory=list)
    exit_codes: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    sample_errors: list[str] = field(default_factory=list)  # stats that moved backwards
    notes: list[str] = field(default_factory=list)
    sim: dict[str, object] = field(default_factory=dict)

    def outages(self) -> list[tuple[float, float]]:
        """PostgreSQL downtime spans (a restart not seen to end counts until the run's end)."""
        return [(r.began, r.ended if r.ended is not None else self.stopped)
                for r in self.pg_restarts]
