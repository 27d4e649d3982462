"""The successful answer of each Battlelog resource (and the missing-generalStats fault)."""

from __future__ import annotations

from bf4ps.sim.battlelog.detailed import detailed_body, missing_general_body
from bf4ps.sim.battlelog.faults import HTML, JSON, Answer
from bf4ps.sim.battlelog.items import vehicles_body, weapons_body
from bf4ps.sim.battlelog.lookup import search_body, soldiers_body, unescape
from bf4ps.sim.battlelog.overview import overview_body
from bf4ps.sim.battlelog.state import Call, SimState

INDEX_PAGE = (
    b"<!DOCTYPE html><html><head><title>Battlelog / Battlefield 4</title></head>"
    b'<body><div id="base-container" data-section="bf4">Battlelog</div></body></html>'
)


def _persona_body(sim: SimState, call: Call, *, missing_general: bool) -> bytes:
    persona_id, platform_int = call.ids
    sim.registry.remember_platform(persona_id, platform_int)
    if missing_general:
        return missing_general_body(persona_id, platform_int, null=sim.faults.coin(0.5))
    snap = sim.snapshot(persona_id)
    if call.resource == "detailed":
        return detailed_body(snap, platform_int)
    if call.resource == "weapons":
        return weapons_body(persona_id, platform_int, snap.growth)
    if call.resource == "vehicles":
        return vehicles_body(persona_id, platform_int, snap.growth)
    user_id = sim.registry.user_of(persona_id)
    return overview_body(snap, platform_int, user_id, active=snap.growth > 1.0)


def ok_body(sim: SimState, call: Call, *, missing_general: bool = False) -> Answer:
    if call.resource == "index":
        return Answer(200, INDEX_PAGE, HTML)
    if call.resource == "search":
        name, _ = unescape(call.query)
        if name:
            sim.registry.remember_name(name)
        return Answer(200, search_body(call.query, sim.config.search_cap), JSON)
    if call.resource == "soldiers":
        return Answer(200, soldiers_body(sim.registry, call.ids[0], sim.snapshot), JSON)
    return Answer(200, _persona_body(sim, call, missing_general=missing_general), JSON)
