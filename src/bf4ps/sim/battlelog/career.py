"""A simulated soldier's career, derived only from persona_seed(persona_id), and the sim clock.

Counters are a base career (as of EPOCH) times a growth factor: inactive personas never change;
active ones keep playing `play_rate` seconds per simulated second, and every counter scales with
their play time, so kills, score, shots, ... grow together and ratios stay put.
"""

from __future__ import annotations

import math
import random
import string
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from bf4ps.sim.personas import persona_seed

EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the base career is the state at this instant
UNKNOWN_MODULUS = 997  # persona_seed % 997 == 0: Battlelog has no such persona
MAX_PERSONA_ID = 2**63 - 1
KITS = ("1", "2", "32", "8", "2048")  # assault, engineer, support, recon, commander


def _rank_scores() -> tuple[int, ...]:
    """Cumulative rank score needed for ranks 0..140 (first 14 from the overview fixture)."""
    scores = [0, 3000, 11000, 22000, 35000, 52000, 70000, 91000, 115000, 140000, 168000]
    scores += [197000, 229000, 262000]
    for rank in range(14, 141):
        step = 33000 + 2500 * (rank - 13) if rank <= 100 else 200_000
        scores.append(scores[-1] + step)
    return tuple(scores)


RANK_SCORES = _rank_scores()


def rank_for(rank_score: int) -> int:
    return max(0, bisect_right(RANK_SCORES, rank_score) - 1)


def is_unknown(persona_id: int) -> bool:
    """Personas Battlelog does not know (always answered with a "type":"error" envelope)."""
    return not 0 < persona_id <= MAX_PERSONA_ID or persona_seed(persona_id) % UNKNOWN_MODULUS == 0


def is_active(persona_id: int, active_fraction: float) -> bool:
    roll = (persona_seed(persona_id) >> 20) % 10_000
    return roll < active_fraction * 10_000


class SimClock:
    """Simulated seconds since EPOCH: wall-clock at speed 1, `speed` times faster otherwise.

    Re-anchored on a speed change so simulated time never jumps. A restart at speed > 1 falls
    back to wall-clock time (counters of active personas may then go back a little)."""

    def __init__(self, speed: float, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._anchor_real = now()
        self._anchor_sim = self._anchor_real - EPOCH
        self._speed = speed

    def elapsed(self) -> float:
        return self._anchor_sim + (self._now() - self._anchor_real) * self._speed

    def set_speed(self, speed: float) -> None:
        if speed != self._speed:
            self._anchor_sim = self.elapsed()
            self._anchor_real = self._now()
            self._speed = speed


@dataclass(frozen=True, slots=True)
class Career:
    """Base (EPOCH) career parameters of one persona. All draws come from one seeded Random."""

    persona_id: int
    seed: int
    time_played: float  # seconds
    play_rate: float  # played seconds per simulated second, while active
    skill: int
    spm: float
    kpm: float
    kd: float
    accuracy: float  # fraction, infantry average
    headshot_rate: float
    win_rate: float
    round_minutes: float
    kit_shares: tuple[float, ...]  # per KITS
    vehicle_kill_share: float
    vehicle_time_share: float
    quit_percentage: float
    longest_headshot: float
    clan_tag: str | None

    def growth(self, elapsed: float, active: bool) -> float:
        """Factor applied to every counter at simulated time `elapsed` (seconds since EPOCH)."""
        if not active or elapsed <= 0:
            return 1.0
        return 1.0 + self.play_rate * elapsed / self.time_played


@lru_cache(maxsize=16_384)
def career_for(persona_id: int) -> Career:
    seed = persona_seed(persona_id)
    rng = random.Random(seed)
    hours = math.exp(rng.uniform(math.log(2.0), math.log(2500.0)))
    z = max(-2.5, min(2.5, rng.gauss(0.0, 1.0)))  # latent skill
    kits = [rng.gammavariate(1.2, 1.0) for _ in KITS]
    kits[-1] *= 0.05  # commander
    total = sum(kits)
    return Career(
        persona_id=persona_id,
        seed=seed,
        time_played=hours * 3600.0,
        play_rate=rng.uniform(0.02, 0.12),
        skill=int(max(0, 180 + 110 * z + rng.gauss(0, 20))),
        spm=max(120.0, 520.0 + 190.0 * z + rng.gauss(0, 40)),
        kpm=max(0.15, 0.72 + 0.26 * z + rng.gauss(0, 0.05)),
        kd=max(0.2, math.exp(0.45 * z + rng.gauss(0, 0.1))),
        accuracy=min(0.25, max(0.05, 0.11 + 0.02 * z + rng.gauss(0, 0.01))),
        headshot_rate=min(0.4, max(0.05, 0.16 + 0.04 * z)),
        win_rate=min(0.7, max(0.3, 0.5 + 0.06 * z)),
        round_minutes=rng.uniform(9.0, 16.0),
        kit_shares=tuple(k / total for k in kits),
        vehicle_kill_share=rng.betavariate(1.2, 6.0),
        vehicle_time_share=rng.betavariate(1.5, 6.0),
        quit_percentage=round(rng.uniform(2.0, 35.0), 10),
        longest_headshot=round(rng.uniform(40.0, 1100.0), 1),
        clan_tag=_clan_tag(rng),
    )


def _clan_tag(rng: random.Random) -> str | None:
    if rng.random() < 0.4:
        return None
    alphabet = string.ascii_uppercase + string.digits
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 4)))
