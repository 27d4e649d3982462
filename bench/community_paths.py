"""The community-compatible endpoints in bench/web_load.py's mix (docs/api.md): gametools'
stats (by name, any soldier), all, weapons and vehicles (soldiers with weapons, by playerid),
statsarray (active soldiers), bf4stats' playerInfo (with weapons), playerRankings (any
soldier) and onlinePlayers. Every soldier asked for is seeded: no submission in the load."""

from __future__ import annotations

import random

from bench.web_seed import BASE_PERSONA, active_offset

GT = "/community/gametools/bf4"
BS = "/community/bf4stats/api"
BF4STATS_PLAT = {"pc": "pc", "ps4": "ps4", "xboxone": "xone"}


def platform_of(g: int) -> str:
    """The seed's platform of soldier offset `g` (web_seed.py: 65 % pc, 17 % ps4)."""
    return "pc" if g % 100 < 65 else ("ps4" if g % 100 < 82 else "xboxone")


def offsets(n: int, every: int, count: int, kind: str, seed: int) -> list[int]:
    """`count` soldier offsets: any soldier, one with weapons (every `every`-th) or active."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if kind == "active":
            out.append(active_offset(rng, n))
        elif kind == "sampled":
            out.append(min(n, rng.randrange(max(1, n // every)) * every + 1))
        else:
            out.append(rng.randrange(1, n + 1))
    return out


def gametools(n: int, every: int, count: int, endpoint: str, kind: str) -> list[str]:
    rng = random.Random(count + len(endpoint))
    out = []
    for g in offsets(n, every, count, kind, count + len(endpoint) + len(kind)):
        who = (f"name=Bench{g}" if endpoint == "stats"
               else f"playerid={BASE_PERSONA + g}")
        fmt = rng.choice(["", "&format_values=false"])
        out.append(f"{GT}/{endpoint}/?{who}&platform={platform_of(g)}{fmt}&lang=en-us")
    return out


def bf4stats(n: int, every: int, count: int, endpoint: str, kind: str) -> list[str]:
    return [f"{BS}/{endpoint}?plat={BF4STATS_PLAT[platform_of(g)]}&name=Bench{g}&output=json"
            for g in offsets(n, every, count, kind, count + 7 * len(endpoint))]


def community_plans(n: int, every: int, requests: int
                    ) -> list[tuple[str, list[str], tuple[str, str] | None, float]]:
    """(name, paths, no credentials, p99 target ms), as web_load.plans."""
    half = max(200, requests // 2)
    return [
        ("gametools /bf4/stats/ (by name)", gametools(n, every, requests, "stats", "any"),
         None, 50.0),
        ("gametools /bf4/all/", gametools(n, every, half, "all", "sampled"), None, 50.0),
        ("gametools /bf4/weapons/", gametools(n, every, half, "weapons", "sampled"), None,
         50.0),
        ("gametools /bf4/vehicles/", gametools(n, every, half, "vehicles", "sampled"), None,
         50.0),
        ("gametools /bf4/statsarray/", gametools(n, every, half, "statsarray", "active"),
         None, 50.0),
        ("bf4stats playerInfo", bf4stats(n, every, half, "playerInfo", "sampled"), None, 50.0),
        ("bf4stats playerRankings", bf4stats(n, every, half, "playerRankings", "any"), None,
         50.0),
        ("bf4stats onlinePlayers", [f"{BS}/onlinePlayers"] * half, None, 50.0),
    ]
