"""What the community-compatible answers (views/gametools*.py, views/bf4stats*.py) share: who
is asked for (by name or persona id, a name also by a former one), the stored reads of a known
soldier in one pipeline, the ratios as the formats compute them from the stored counters, and
the absolute URLs of the images the website serves for them (web/compat/images.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bf4ps.battlelog.models import DetailedStats, ProfileStats, VehicleItem, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Read, batch
from bf4ps.domain import Platform
from bf4ps.interactive import submit as submit_use_case
from bf4ps.interactive.target import ByName
from bf4ps.stats import read
from bf4ps.stats.items import VEHICLES, WEAPONS
from bf4ps.stats.read import SoldierOverview, StoredItem
from bf4ps.views import soldier as soldier_view
from bf4ps.views.soldier import Soldier

IMAGE_PREFIX = "/community/img"  # web/compat/images.py serves every image the answers name
KITS = (("assault", 1), ("engineer", 2), ("support", 32), ("recon", 8), ("commander", 2048))


@dataclass(frozen=True, slots=True)
class Stored:
    """A known soldier's stored statistics, read in one pipeline."""

    soldier: Soldier
    overview: SoldierOverview
    weapons: list[StoredItem[WeaponItem]]
    vehicles: list[StoredItem[VehicleItem]]

    @property
    def detailed(self) -> DetailedStats | None:
        return self.overview.detailed.stats if self.overview.detailed else None

    @property
    def profile(self) -> ProfileStats | None:
        return self.overview.profile.stats if self.overview.profile else None

    @property
    def collected_at(self) -> datetime | None:
        """When the soldier's detailed statistics were collected (None: not yet)."""
        return self.overview.detailed.fetched_at if self.overview.detailed else None


async def find(conn: Conn, platform: Platform, *, name: str | None = None,
               persona_id: int | None = None) -> Soldier | None:
    """A known soldier by persona id, else by name (current, then former: the submission's
    own rule, interactive/submit.py)."""
    if persona_id is not None:
        return await soldier_view.find(conn, platform, persona_id)
    if name is None:
        return None
    known = await submit_use_case.find(conn, ByName(platform, name))
    if known is None:
        return None
    return await soldier_view.find(conn, known.platform, known.persona_id)


async def stored(conn: Conn, s: Soldier, *, items: bool = True) -> Stored:
    """The overview (and, with `items`, the weapons and vehicles), one pipeline."""
    overview = read.overview_reads(s.soldier_id)
    sid = {"soldier_id": s.soldier_id}
    weapons = Read(read.stored_items(WEAPONS), WEAPONS.of_query, sid)
    vehicles = Read(read.stored_items(VEHICLES), VEHICLES.of_query, sid)
    await batch(conn, *overview, *((weapons, vehicles) if items else ()))
    return Stored(s, read.overview_from(s.soldier_id, overview),
                  weapons.rows if items else [], vehicles.rows if items else [])


def div(a: float | None, b: float | None, scale: float = 1.0) -> float | None:
    """a / b * scale at full precision: None when a counter is missing, 0 over a zero."""
    if a is None or b is None:
        return None
    return a / b * scale if b else 0.0


def per_minute(count: float | None, seconds: float | None) -> float | None:
    return div(count, seconds, 60.0)


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def duration(seconds: int | None) -> str | None:
    """Python's str(timedelta): '6 days, 14:16:01', '1 day, 2:03:04', '14:16:01'."""
    return None if seconds is None else str(timedelta(seconds=seconds))


def image(base: str, folder: str, name: str) -> str:
    """An absolute image URL on this website (`base`: its origin, no trailing slash)."""
    return f"{base}{IMAGE_PREFIX}/{folder}/{image_name(name)}.svg"


def image_name(name: str) -> str:
    """A file name from a slug or label: lower-case letters, digits and '-'."""
    cleaned = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return cleaned[:60] or "none"


def best_class(d: DetailedStats | None) -> str | None:
    if d is None:
        return None
    scores = [(getattr(d, f"{kit}_score") or 0, kit) for kit, _ in KITS]
    score, kit = max(scores)
    return kit.capitalize() if score else None
