"""The headline numbers of one persona at one instant, shared by every payload that shows them.

Built from the cached Loadout times the growth factor, so detailed, profile and the soldiers box
agree with each other and with the weapons/vehicles items (kills = weapon + vehicle kills,
headshots and shots = sums over the weapons, time played ~ score / SPM).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from bf4ps.sim.battlelog.career import KITS, Career, rank_for
from bf4ps.sim.battlelog.items import Loadout, loadout_for

MODES = (  # detailed key, gameModesScore bit(s), typical share of a soldier's mode score
    ("conquest", ("1", "64", "68719476736"), 6.0),
    ("rush", ("2",), 1.0),
    ("teamdeathmatch", ("32", "8"), 1.0),
    ("domination", ("1024",), 0.6),
    ("obliteration", ("2097152", "137438953472"), 0.4),
    ("capturetheflag", ("524288",), 0.3),
    ("airsuperiority", ("8388608",), 0.2),
    ("chainlink", ("34359738368",), 0.4),
    ("elimination", ("16777216",), 0.2),
    ("carrierassault", ("33554432", "67108864", "134217728"), 0.3),
)
MODE_ALIASES = {  # keys Battlelog repeats with the same value
    "conquest": ("conquestlarge", "conquest_ladder"),
    "teamdeathmatch": ("sqdm",),
    "obliteration": ("sqobliteration",),
    "carrierassault": ("carrierassaultlarge", "carrierassaultsmall"),
}


@dataclass(frozen=True, slots=True)
class Snapshot:
    persona_id: int
    career: Career
    loadout: Loadout
    growth: float
    time_played: float
    minutes: float
    score: float
    kills: float
    deaths: float
    headshots: float
    fired: float
    hit: float
    rounds: float
    wins: float
    losses: float
    rank: int
    kit_scores: dict[str, float]
    kit_times: dict[str, float]
    mode_scores: dict[str, float]

    @property
    def kd(self) -> float:
        return round(self.kills / self.deaths, 2) if self.deaths >= 1 else 0.0

    @property
    def kpm(self) -> float:
        return round(self.kills / self.minutes, 2) if self.minutes else 0.0

    @property
    def spm(self) -> int:
        return round(self.score / self.minutes) if self.minutes else 0

    @property
    def accuracy_percent(self) -> float:
        return round(100.0 * self.hit / self.fired, 10) if self.fired else 0.0


@lru_cache(maxsize=16_384)
def _kit_score_shares(career: Career) -> tuple[float, ...]:
    """Each class's share of the kit score: its share of the time at a class-specific score
    rate, so the classes' score per minute differs as it does on Battlelog."""
    rng = random.Random(career.seed ^ 0x5C0DE)
    weights = [share * rng.uniform(0.7, 1.35) for share in career.kit_shares]
    total = sum(weights) or 1.0
    return tuple(w / total for w in weights)


@lru_cache(maxsize=16_384)
def _mode_shares(seed: int) -> tuple[float, ...]:
    rng = random.Random(seed ^ 0x40DE5)
    weights = [share * rng.gammavariate(0.8, 1.0) for _, _, share in MODES]
    total = sum(weights) or 1.0
    return tuple(w / total for w in weights)


def take(persona_id: int, growth: float) -> Snapshot:
    loadout = loadout_for(persona_id)
    career = loadout.career
    time_played = career.time_played * growth
    minutes = time_played / 60.0
    score = career.spm * minutes
    kills = loadout.kills * growth
    rounds = minutes / career.round_minutes
    wins = rounds * career.win_rate * 0.93  # some rounds are quit
    kit_total = score * 0.5
    modes = score * 0.3
    return Snapshot(
        persona_id=persona_id,
        career=career,
        loadout=loadout,
        growth=growth,
        time_played=time_played,
        minutes=minutes,
        score=score,
        kills=kills,
        deaths=kills / career.kd,
        headshots=loadout.headshots * growth,
        fired=loadout.fired * growth,
        hit=loadout.hit * growth,
        rounds=rounds,
        wins=wins,
        losses=rounds * 0.93 - wins,
        rank=rank_for(round(score)),
        kit_scores={k: kit_total * s for k, s in zip(KITS, _kit_score_shares(career), strict=True)},
        kit_times={k: time_played * s for k, s in zip(KITS, career.kit_shares, strict=True)},
        mode_scores={
            name: modes * share
            for (name, _, _), share in zip(MODES, _mode_shares(career.seed), strict=True)
        },
    )
