"""Play sessions of the simulated world, shared by the BF4SW and Battlelog simulators.

A deterministic function of (persona, wall-clock time, speed, anchor), so the two simulators
agree without talking: BF4SW sights a player on his server while a session is on, and
Battlelog's counters of that player grow only while he plays, every counter in proportion to
the seconds played. Simulated time runs `speed` times the wall clock from `anchor` (unix
seconds; nothing is played before it). In each cycle of CYCLE simulated seconds a player plays
at most one session (probability PLAY_SHARE), MIN..MAX seconds long at a random offset, on one
of SERVERS. The draws repeat every PERIOD cycles, so the seconds played up to any instant are
a closed sum. Only a `players` share of the personas (persona_seed) ever plays sessions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from bf4ps.sim.personas import persona_seed

CYCLE = 2 * 3600.0  # simulated seconds
PLAY_SHARE = 0.8
MIN_SESSION = 15 * 60.0
MAX_SESSION = 60 * 60.0
PERIOD = 16
SERVERS: tuple[tuple[str, str], ...] = tuple(
    (f"4d0151b3-{i:04x}-4c5e-9a7f-{0xB4F0000 + i:012x}", name) for i, name in enumerate((
        "#1 Operation Locker 24/7 | Hardcore", "=ADK= Metro Conquest | 1000 tickets",
        "[GGS] Golmud Railway | Vanilla", "Noobs Welcome | Rush 64p", "EU | Shanghai TDM 24/7",
        "LSD | All Maps Conquest Large", "=DOG= Pearl Market | Infantry", "Zavod 311 | 2x Tix",
        "US East | Dawnbreaker Domination", "Paracel Storm | Air Superiority",
        "Hainan Resort | Obliteration", "Lancang Dam | Conquest Small")))


@dataclass(frozen=True, slots=True)
class PlaySession:
    start: float  # unix seconds (wall clock)
    end: float
    server_guid: str
    server_name: str

    @property
    def seconds(self) -> float:
        """Wall-clock seconds (the simulated seconds played are `speed` times more)."""
        return self.end - self.start


@lru_cache(maxsize=65_536)
def _pattern(persona_id: int) -> tuple[tuple[float, float, int] | None, ...]:
    """Per cycle of the period: (offset, length, server index) in simulated seconds, or None."""
    rng = random.Random(persona_seed(persona_id) ^ 0x9A7E5)
    out: list[tuple[float, float, int] | None] = []
    for _ in range(PERIOD):
        if rng.random() >= PLAY_SHARE:
            out.append(None)
            continue
        length = rng.uniform(MIN_SESSION, MAX_SESSION)
        out.append((rng.uniform(0, CYCLE - length), length, rng.randrange(len(SERVERS))))
    return tuple(out)


@lru_cache(maxsize=65_536)
def _per_period(persona_id: int) -> float:
    return sum(p[1] for p in _pattern(persona_id) if p is not None)


@dataclass(frozen=True, slots=True)
class Schedule:
    speed: float = 1.0
    anchor: float = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    players: float = 0.0  # share of personas that play sessions

    def plays(self, persona_id: int) -> bool:
        return (persona_seed(persona_id) >> 8) % 10_000 < self.players * 10_000

    def _sim(self, t: float) -> float:
        return max(0.0, (t - self.anchor) * self.speed)

    def _real(self, sim: float) -> float:
        return self.anchor + sim / self.speed

    def session(self, persona_id: int, cycle: int) -> PlaySession | None:
        draw = _pattern(persona_id)[cycle % PERIOD]
        if draw is None or cycle < 0:
            return None
        offset, length, server = draw
        start = cycle * CYCLE + offset
        guid, name = SERVERS[server]
        return PlaySession(self._real(start), self._real(start + length), guid, name)

    def at(self, persona_id: int, t: float) -> PlaySession | None:
        """The session on at wall-clock `t`, if any (None for non-players)."""
        if not self.plays(persona_id) or t < self.anchor:
            return None
        s = self.session(persona_id, int(self._sim(t) // CYCLE))
        return s if s is not None and s.start <= t < s.end else None

    def between(self, persona_id: int, t0: float, t1: float) -> list[PlaySession]:
        """Sessions overlapping [t0, t1), oldest first."""
        if not self.plays(persona_id):
            return []
        first, last = int(self._sim(t0) // CYCLE), int(self._sim(t1) // CYCLE)
        found = (self.session(persona_id, k) for k in range(first, last + 1))
        return [s for s in found if s is not None and s.end > t0 and s.start < t1]

    def played(self, persona_id: int, t: float) -> float:
        """Simulated seconds played from the anchor up to wall-clock `t`."""
        if not self.plays(persona_id):
            return 0.0
        sim = self._sim(t)
        cycle = int(sim // CYCLE)
        periods, rest = divmod(cycle, PERIOD)
        total = periods * _per_period(persona_id)
        total += sum(p[1] for p in _pattern(persona_id)[:rest] if p is not None)
        draw = _pattern(persona_id)[rest]
        if draw is not None:
            into = sim - cycle * CYCLE - draw[0]
            total += min(max(into, 0.0), draw[1])
        return total
