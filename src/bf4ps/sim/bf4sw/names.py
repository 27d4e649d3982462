"""Gamer tags for the simulated BF4SW population: deterministic from the seed, unique per
platform, and searchable in the Battlelog simulator (whose search gives a name personas on a
platform subset: a name is only handed out for a platform that subset contains).

Shapes seen on BF4 scoreboards: camel-cased word pairs with a number ("SilentViper87"),
xX-wrapped tags, ranks ("SgtBacon"), clan-ish prefixes ("TTV_Reaper", "iTz-Ghost"), leetspeak,
lower-case underscores; Xbox gamertags may contain spaces ("Dark Knight 42"). Names are 3-16
characters (Origin IDs and PSN IDs allow 16, Xbox gamertags 15).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bf4ps.domain import Platform
from bf4ps.sim.battlelog.career import is_unknown
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.sim.personas import persona_id_for

ADJECTIVES = (
    "Silent", "Dark", "Mad", "Lone", "Crazy", "Toxic", "Frozen", "Rogue", "Savage", "Lucky",
    "Iron", "Steel", "Red", "Black", "Grim", "Swift", "Brutal", "Lazy", "Angry", "Sneaky",
    "Deadly", "Wild", "Evil", "Hyper", "Epic", "Royal", "Dirty", "Nasty", "Cold", "Ghostly",
)
NOUNS = (
    "Viper", "Reaper", "Ghost", "Wolf", "Sniper", "Hawk", "Eagle", "Tiger", "Panda", "Falcon",
    "Cobra", "Shadow", "Raven", "Bear", "Fox", "Knight", "Ninja", "Pirate", "Hunter", "Tank",
    "Medic", "Bacon", "Potato", "Llama", "Camper", "Rambo", "Spartan", "Titan", "Phantom",
    "Dragon", "Mamba", "Jackal", "Bullet", "Rocket", "Thunder", "Storm", "Blade", "Sarge",
    "Goose", "Noob", "Badger", "Walrus", "Moose", "Rhino", "Kraken", "Wraith", "Vandal",
)
RANKS = ("Sgt", "Cpl", "Pvt", "Capt", "Maj", "Col", "Lt", "Gen", "Cmdr", "Doc", "Mr", "Dr")
CLANS = ("TTV", "YT", "iTz", "FaZe", "DICE", "LSD", "RIP", "OG", "SWE", "GER", "UK", "PL")
FIRST_NAMES = ("Kevin", "Dave", "Mike", "Tom", "Chris", "Lukas", "Jonas", "Marco", "Anna",
               "Pete", "Sam", "Alex", "Max", "Nico", "Ivan", "Jack", "Leo", "Finn", "Sara")
LEET = str.maketrans({"e": "3", "a": "4", "o": "0", "i": "1"})
MAX_LENGTH = 16


def _num(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return str(rng.randint(1975, 2009))
    if roll < 0.7:
        return str(rng.randint(1, 99))
    return rng.choice(("", "1337", "420", "69", "007", "x", "TV"))


def _pair(rng: random.Random) -> str:
    return rng.choice(ADJECTIVES) + rng.choice(NOUNS) + _num(rng)


def _wrapped(rng: random.Random) -> str:
    return "xX" + rng.choice(NOUNS) + rng.choice(NOUNS) + "Xx"


def _rank(rng: random.Random) -> str:
    return rng.choice(RANKS) + rng.choice(NOUNS) + rng.choice(("", "", _num(rng)))


def _clan(rng: random.Random) -> str:
    return rng.choice(CLANS) + rng.choice(("_", "-", "")) + rng.choice(NOUNS) + _num(rng)


def _person(rng: random.Random) -> str:
    return rng.choice(FIRST_NAMES) + rng.choice(("", "_", "-")) + _num(rng)


def _leet(rng: random.Random) -> str:
    return (rng.choice(ADJECTIVES) + rng.choice(NOUNS)).lower().translate(LEET) + _num(rng)


def _lower(rng: random.Random) -> str:
    return f"{rng.choice(NOUNS).lower()}_{rng.choice(NOUNS).lower()}{_num(rng)}"


def _spaced(rng: random.Random) -> str:
    return f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.randint(1, 999)}"


SHAPES: tuple[tuple[Callable[[random.Random], str], int], ...] = (
    (_pair, 34), (_wrapped, 6), (_rank, 10), (_clan, 10), (_person, 14), (_leet, 10),
    (_lower, 10),
)


class NameBook:
    """Hands out names, each at most once per platform (case-insensitively: Battlelog's ids
    ignore case), and never one whose persona id another name on the platform already has."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: dict[Platform, set[str]] = {}
        self.personas: dict[Platform, set[int]] = {}
        self.spare: dict[Platform, list[str]] = {}
        self._shapes = [s for s, _ in SHAPES]
        self._weights = [w for _, w in SHAPES]

    def take(self, platform: Platform, *, first: bool = True) -> str:
        """A fresh name on `platform`. A first name (it gives the persona its id) must be one
        Battlelog's search knows on that platform, as a known persona; candidates fit for other
        platforms are kept for them."""
        spares = self.spare.get(platform, [])
        while spares:
            name = spares.pop()
            if self._fits(name, platform):
                return self._claim(name, platform)
        while True:
            name = self._candidate(platform)
            if name.casefold() in self.used.get(platform, ()):
                continue
            if not first:  # a later alias: its persona id is the first name's
                self.used.setdefault(platform, set()).add(name.casefold())
                return name
            fits = name_platforms(name)
            if platform in fits and self._fits(name, platform):
                return self._claim(name, platform)
            for other in fits:  # spaces are for Xbox gamertags only
                if len(self.spare.setdefault(other, [])) < 1000 and (
                        " " not in name or other is Platform.XBOXONE):
                    self.spare[other].append(name)

    def remember(self, name: str, platform: Platform, persona_id: int | None = None) -> None:
        """Mark a name (and a persona id) as taken, e.g. one already in the database."""
        self.used.setdefault(platform, set()).add(name.casefold())
        self.personas.setdefault(platform, set()).add(
            persona_id if persona_id is not None else persona_id_for(name, platform))

    def _fits(self, name: str, platform: Platform) -> bool:
        persona = persona_id_for(name, platform)
        return (name.casefold() not in self.used.get(platform, ())
                and persona not in self.personas.get(platform, ()) and not is_unknown(persona))

    def _claim(self, name: str, platform: Platform) -> str:
        self.remember(name, platform)
        return name

    def _candidate(self, platform: Platform) -> str:
        rng = self.rng
        if platform is Platform.XBOXONE and rng.random() < 0.15:
            name = _spaced(rng)
        else:
            name = rng.choices(self._shapes, self._weights)[0](rng)
        if len(name) > MAX_LENGTH:
            name = name[:MAX_LENGTH].rstrip(" _-")
        if len(name) < 3:
            name += str(rng.randint(100, 999))
        return name
