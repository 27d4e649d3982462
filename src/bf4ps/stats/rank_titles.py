"""BF4's rank titles ("Corporal II", "Colonel") by rank number, from data/rank_titles.toml (its
source is named there), and the one rank a soldier page shows: the newest answer's.

A rank without a sourced title (101-140) is shown as "Rank N", never guessed. Progress within
the rank runs from the rank's points to the next rank's, both from Battlelog's overview
(``current_rank_score``, ``next_rank_score``); they belong to the overview's rank, so they are
used only when the shown rank is that one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from operator import itemgetter

from bf4ps.battlelog.models import DetailedStats, ProfileStats
from bf4ps.stats.read import SoldierOverview

MAX_RANK = 140


@cache
def titles() -> dict[int, str]:
    raw = (resources.files("bf4ps.stats") / "data" / "rank_titles.toml").read_text("utf-8")
    return {int(rank): str(title) for rank, title in tomllib.loads(raw)["titles"].items()}


def title(rank: int | None) -> str:
    """The rank's title, "Rank N" when no source names it, "Unranked" without a rank."""
    if rank is None:
        return "Unranked"
    return titles().get(rank) or f"Rank {rank}"


@dataclass(frozen=True, slots=True)
class RankNow:
    """The rank the newest answer says, its rank points, and its bounds when known."""

    level: int
    score: int | None
    floor: int | None  # the rank's points
    ceiling: int | None  # the next rank's points (None at the top)

    @property
    def percent(self) -> float | None:
        """How far through the rank (0-100), None when its bounds are unknown."""
        if self.score is None or self.floor is None or not self.ceiling:
            return None
        span = self.ceiling - self.floor
        if span <= 0:
            return None
        return round(min(100.0, max(0.0, (self.score - self.floor) / span * 100)), 1)


def newest_rank(ov: SoldierOverview) -> RankNow | None:
    """The newest answer's rank (detailed or overview, whichever was collected last)."""
    answers: list[tuple[datetime, DetailedStats | ProfileStats]] = [
        (stored.fetched_at, stored.stats) for stored in (ov.detailed, ov.profile)
        if stored is not None and stored.stats.rank is not None]
    if not answers:
        return None
    newest = max(answers, key=itemgetter(0))[1]
    level = newest.rank if newest.rank is not None else 0
    p = ov.profile.stats if ov.profile is not None else None
    if p is None or p.rank != level:  # the overview's bounds are another rank's
        return RankNow(level=level, score=newest.rank_score, floor=None, ceiling=None)
    return RankNow(level=level, score=newest.rank_score, floor=p.current_rank_score,
                   ceiling=p.next_rank_score)
