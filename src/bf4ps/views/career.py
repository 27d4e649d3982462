"""What the overview and detailed stats say beyond the headline, as the soldier page shows it:
rank and progress to the next rank, game-mode scores, the completion bars (assignments,
medals, ribbons, ...) and the soldier's linked soldiers on other platforms."""

from __future__ import annotations

from bf4ps.domain import Platform
from bf4ps.stats import rank_titles
from bf4ps.stats.read import SoldierOverview
from bf4ps.views.soldier import Model, Soldier

MODES = (("conquest", "Conquest"), ("rush", "Rush"), ("team_deathmatch", "Team Deathmatch"),
         ("squad_deathmatch", "Squad Deathmatch"), ("domination", "Domination"),
         ("obliteration", "Obliteration"), ("defuse", "Defuse"),
         ("capture_the_flag", "Capture the Flag"), ("air_superiority", "Air Superiority"),
         ("carrier_assault", "Carrier Assault"), ("chain_link", "Chain Link"))
AWARDS = {"assignments": "Assignments", "medals": "Medals", "ribbons": "Ribbons",
          "weapons": "Weapon unlocks", "vehicles": "Vehicle unlocks", "campaign": "Campaign",
          "kititems": "Kit unlocks", "dogtags": "Dog tags", "gadgets": "Gadgets"}


class Rank(Model):
    level: int | None
    name: str  # BF4's title of the rank (rank_titles.py); "Rank N" where none is sourced
    score: int | None
    rank_score: int | None = None  # the points the rank starts at
    next_score: int | None  # the rank score the next rank needs
    to_next: int | None
    percent: float | None  # how far through the rank: from its points to the next rank's


class ModeScore(Model):
    mode: str
    name: str
    score: int


class Award(Model):
    slug: str
    name: str
    current: int | None
    maximum: int | None
    percent: float | None


class Linked(Model):
    name: str
    platform: str
    persona_id: int
    url: str


class Career(Model):
    rank: Rank | None
    modes: list[ModeScore]
    awards: list[Award]
    linked: list[Linked]


def _percent(current: int | None, maximum: int | None) -> float | None:
    if current is None or not maximum:
        return None
    return round(min(100.0, max(0.0, current / maximum * 100)), 1)


def rank_of(ov: SoldierOverview) -> Rank | None:
    """The one rank of the page: the newest answer's (rank_titles.newest_rank)."""
    now = rank_titles.newest_rank(ov)
    if now is None:
        return None
    score, nxt = now.score, now.ceiling
    return Rank(level=now.level, name=rank_titles.title(now.level), score=score,
                rank_score=now.floor, next_score=nxt,
                to_next=max(0, nxt - score) if nxt is not None and score is not None else None,
                percent=now.percent)


def career(s: Soldier, ov: SoldierOverview) -> Career:
    p = ov.profile.stats if ov.profile else None
    d = ov.detailed.stats if ov.detailed else None
    modes = [ModeScore(mode=key, name=name, score=score) for key, name in MODES
             if d is not None and (score := getattr(d, f"{key}_score")) is not None]
    modes.sort(key=lambda m: -m.score)
    awards = [Award(slug=b.slug, name=AWARDS.get(b.slug, b.slug.replace("_", " ").capitalize()),
                    current=b.current, maximum=b.maximum, percent=_percent(b.current, b.maximum))
              for b in (p.progress if p else ())]
    linked = []
    for ls in p.linked_soldiers if p else ():
        try:
            platform = Platform.from_battlelog_int(ls.platform_int)
        except ValueError:
            continue
        if ls.persona_id == s.persona_id and platform is s.platform:
            continue
        linked.append(Linked(name=ls.name, platform=platform.value, persona_id=ls.persona_id,
                             url=f"/soldiers/{platform.value}/{ls.persona_id}"))
    return Career(rank=rank_of(ov), modes=modes, awards=awards, linked=linked)
