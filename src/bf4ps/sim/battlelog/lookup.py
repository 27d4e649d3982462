"""Name -> persona search and a user's soldiers (overviewBoxStats).

A name has personas on a deterministic subset of platforms (PC 65 %, PS4 17 %, Xbox One 18 % as
the primary one, sometimes more), each with persona_id_for(name, platform) as its id, so the
BF4SW simulator's population and this search agree. User ids: a name's account id is derived
from the name; a persona only seen by id gets USER_FROM_PERSONA + personaId. The registry only
remembers names (search) and platforms (stats URLs) so that the soldiers box can show them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import TypeVar

import orjson

from bf4ps.domain import Platform
from bf4ps.sim.battlelog.career import is_unknown
from bf4ps.sim.battlelog.jsonvalue import JsonObject, arr, array, obj
from bf4ps.sim.battlelog.snapshot import Snapshot
from bf4ps.sim.battlelog.templates import soldier_box_template
from bf4ps.sim.personas import persona_id_for

USER_FROM_NAME = 2_900_000_000_000_000_000
USER_FROM_PERSONA = 2_800_000_000_000_000_000
NAMESPACES = {
    Platform.PC: "cem_ea_id",
    Platform.XBOX360: "xbox",
    Platform.XBOXONE: "xbox",
    Platform.PS3: "ps3",
    Platform.PS4: "ps3",
}
PRIMARY = ((Platform.PC, 65), (Platform.PS4, 17), (Platform.XBOXONE, 18))
BF4, BF3 = 2048, 2
REGISTRY_LIMIT = 200_000
V = TypeVar("V")


def _digest(*parts: str) -> int:
    raw = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big")


def name_platforms(name: str) -> tuple[Platform, ...]:
    """Platforms on which `name` has a BF4 soldier (never an 'unknown' persona)."""
    rng = random.Random(_digest("platforms", name.casefold()))
    primary = rng.choices([p for p, _ in PRIMARY], weights=[w for _, w in PRIMARY])[0]
    chosen = {primary} | {p for p in Platform if rng.random() < 0.1}
    return tuple(p for p in Platform if p in chosen and not is_unknown(persona_id_for(name, p)))


def user_id_for_name(name: str) -> int:
    return USER_FROM_NAME + _digest("user", name.casefold()) % 10**17


class Registry:
    """What the simulator has been told about names and platforms (bounded, oldest dropped)."""

    def __init__(self) -> None:
        self.user_names: dict[int, str] = {}
        self.persona_users: dict[int, int] = {}
        self.persona_platforms: dict[int, int] = {}

    @staticmethod
    def _put(table: dict[int, V], key: int, value: V) -> None:
        table.pop(key, None)
        table[key] = value
        if len(table) > REGISTRY_LIMIT:
            del table[next(iter(table))]

    def remember_name(self, name: str) -> None:
        user_id = user_id_for_name(name)
        self._put(self.user_names, user_id, name)
        for platform in name_platforms(name):
            persona_id = persona_id_for(name, platform)
            self._put(self.persona_users, persona_id, user_id)
            self._put(self.persona_platforms, persona_id, platform.battlelog_int)

    def remember_platform(self, persona_id: int, platform_int: int) -> None:
        if self.persona_platforms.get(persona_id) != platform_int:
            self._put(self.persona_platforms, persona_id, platform_int)

    def user_of(self, persona_id: int) -> int:
        return self.persona_users.get(persona_id, USER_FROM_PERSONA + persona_id)

    def soldiers_of(self, user_id: int) -> list[tuple[int, str, int]]:
        """(personaId, name, platformInt) of a user's BF4 soldiers."""
        name = self.user_names.get(user_id)
        if name is None and USER_FROM_PERSONA < user_id < USER_FROM_NAME:
            persona_id = user_id - USER_FROM_PERSONA
            platform_int = self.persona_platforms.get(persona_id, Platform.PC.battlelog_int)
            return (
                []
                if is_unknown(persona_id)
                else [(persona_id, f"Soldier{persona_id}", platform_int)]
            )
        if name is None and USER_FROM_NAME <= user_id < USER_FROM_NAME + 10**17:
            name = f"Player{user_id % 10**8}"
        if name is None:
            return []
        return [(persona_id_for(name, p), name, p.battlelog_int) for p in name_platforms(name)]


def _hit(name: str, persona_id: int, platform: Platform, games: int) -> JsonObject:
    user_id = str(user_id_for_name(name))
    return {
        "picture": "",
        "userId": user_id,
        "user": {
            "username": name,
            "gravatarMd5": hashlib.md5(name.casefold().encode()).hexdigest(),
            "userId": user_id,
            "createdAt": 1_300_000_000 + _digest("created", name.casefold()) % 300_000_000,
        },
        "personaId": str(persona_id),
        "personaName": name,
        "namespace": NAMESPACES[platform],
        "games": {str(platform.battlelog_int): str(games)},
    }


WILDCARD_DECOYS = "abcdefghijklmnopqrstuvwxyz"


def unescape(query: str) -> tuple[str, list[int]]:
    """The name a query means (backslash escapes removed) and the positions of its unescaped
    `_` wildcards (an unescaped `%` is dropped: any run, matched by the name itself)."""
    name: list[str] = []
    wild: list[int] = []
    chars = iter(query.strip())
    for char in chars:
        if char == "\\":
            name.append(next(chars, ""))
        elif char == "_":
            wild.append(len(name))
            name.append("_")
        elif char != "%":
            name.append(char)
    return "".join(name), wild


def _wildcard_decoys(name: str, wild: list[int]) -> list[JsonObject]:
    """Other soldiers an unescaped `_` matches: the name with a letter in its place."""
    decoys = []
    for letter in WILDCARD_DECOYS:
        other = "".join(letter if i in wild else c for i, c in enumerate(name))
        decoys.append(_hit(other, persona_id_for(other, Platform.PC), Platform.PC, BF4))
    return decoys


def search_body(query: str, cap: int | None = None) -> bytes:
    """Every persona matching the query, at most ``cap`` of them: the exact ones (BF4 bit 2048
    set) plus the decoys real search returns too (a longer name; the same name where it only
    ever played BF3; for an unescaped `_`, the names with any letter there, listed first)."""
    name, wild = unescape(query)
    hits = _name_hits(name)
    if wild:
        hits = _wildcard_decoys(name, wild) + hits
    data = hits if cap is None else hits[:cap]
    return orjson.dumps({"type": "success", "message": "RESULT", "data": data})


def _name_hits(name: str) -> list[JsonObject]:
    hits: list[JsonObject] = []
    if name:
        platforms = name_platforms(name)
        for platform in platforms:
            games = BF4 | BF3 if platform in (Platform.XBOX360, Platform.PS3) else BF4
            hits.append(_hit(name, persona_id_for(name, platform), platform, games))
        rng = random.Random(_digest("decoys", name.casefold()))
        if rng.random() < 0.5:
            longer = f"{name}{rng.randint(1, 99)}"
            hits.append(_hit(longer, persona_id_for(longer, Platform.PC), Platform.PC, BF4))
        others = [p for p in (Platform.PS3, Platform.XBOX360) if p not in platforms]
        if others and rng.random() < 0.25:
            hits.append(_hit(name, _digest("bf3", name.casefold()) % 10**11, others[0], BF3))
    return hits


def _soldier(
    template: JsonObject, snap: Snapshot, name: str, platform_int: int, user_id: int
) -> JsonObject:
    games: JsonObject = {str(platform_int): str(BF4)}
    persona = dict(obj(template["persona"]))
    persona.update(
        userId=str(user_id),
        personaId=str(snap.persona_id),
        personaName=name,
        namespace=NAMESPACES[Platform.from_battlelog_int(platform_int)],
        games=games,
        gamesJson=orjson.dumps(games).decode(),
        clanTag=snap.career.clan_tag or "",
        updatedAt=1_600_000_000 + snap.career.seed % 160_000_000,
    )
    soldier = dict(template)
    soldier.update(
        persona=persona,
        platform=platform_int,
        game=BF4,
        rank=snap.rank,
        score=round(snap.score),
        skill=snap.career.skill,
        kills=round(snap.kills),
        deaths=round(snap.deaths),
        numWins=round(snap.wins),
        numLosses=round(snap.losses),
        timePlayed=round(snap.time_played),
        isPersonaBanned=False,
    )
    return soldier


def soldiers_body(registry: Registry, user_id: int, snapshot: Callable[[int], Snapshot]) -> bytes:
    data = dict(soldier_box_template())
    template = obj(arr(data["soldiersBox"])[0])
    soldiers = registry.soldiers_of(user_id)
    data["soldiersBox"] = [
        _soldier(template, snapshot(pid), name, platform_int, user_id)
        for pid, name, platform_int in soldiers
    ]
    data["userGames"] = {str(BF4): array(sorted({p for _, _, p in soldiers}))}
    return orjson.dumps({"type": "success", "message": "OK", "data": data})
