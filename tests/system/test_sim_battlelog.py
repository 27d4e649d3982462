"""The Battlelog simulator over real HTTP on loopback (uvicorn in a background thread).

Clients bind to 127.0.0.x source addresses to stand for different egress IPs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from bf4ps.battlelog.classify import slows_egress
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.models import Session
from bf4ps.domain import ErrorClass, Platform, Resource
from bf4ps.sim.battlelog.career import is_active, is_unknown
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.lookup import name_platforms, search_body
from bf4ps.sim.battlelog.server import RunningSimulator, spawn, start_in_thread
from bf4ps.sim.personas import persona_id_for

SPEED = 200.0
BASELINE: dict[str, Any] = {
    "speed": SPEED,
    "min_interval": 0.0,
    "window_requests": None,
    "window_seconds": 20.0,
    "throttle_status": "403",
    "penalty": 0.0,
    "tolerance": 0.0,
    "fleet_budget": None,
    "fleet_window": 3600.0,
    "fault_5xx": 0.0,
    "fault_timeout": 0.0,
    "fault_html": 0.0,
    "fault_error": 0.0,
    "fault_missing_general": 0.0,
    "fault_unknown": 0.0,
    "fault_unknown_error": 0.0,
    "fault_soft_throttle": 0.0,
    "active_fraction": 0.3,
    "search_check_sum": "ignored",
    "login_wall": "none",
    "session_redirects": 0,
    "search_cap": None,
    "empty_search_after": None,
}
DETAILED = "/bf4/warsawdetailedstatspopulate/{}/1/"
PROFILE = "/bf4/warsawoverviewpopulate/{}/1/"
WEAPONS = "/bf4/warsawWeaponsPopulateStats/{}/1/stats/"
VEHICLES = "/bf4/warsawvehiclesPopulateStats/{}/1/stats/"
NAMESPACES = {
    Platform.PC: "cem_ea_id",
    Platform.XBOX360: "xbox",
    Platform.XBOXONE: "xbox",
    Platform.PS3: "ps3",
    Platform.PS4: "ps3",
}


def find_persona(accept: Callable[[int], bool]) -> int:
    for n in range(100_000):
        persona_id = persona_id_for(f"sim-test-{n}", Platform.PC)
        if accept(persona_id):
            return persona_id
    raise AssertionError("no such persona")


INACTIVE = find_persona(lambda p: not is_unknown(p) and not is_active(p, 0.3))
ACTIVE = find_persona(lambda p: not is_unknown(p) and is_active(p, 0.3))
UNKNOWN = find_persona(is_unknown)


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSimulator]:
    with start_in_thread(SimConfig(port=0, seed=7, **BASELINE)) as running:
        yield running


@pytest.fixture(autouse=True)
def clean(sim: RunningSimulator) -> None:
    httpx.post(sim.url("/__sim/config"), json=BASELINE).raise_for_status()
    httpx.post(sim.url("/__sim/reset")).raise_for_status()


MakeClient = Callable[..., httpx.Client]


@pytest.fixture
def client(sim: RunningSimulator) -> MakeClient:
    def make(ip: str = "127.0.0.1", timeout: float = 10.0) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=ip)
        return httpx.Client(base_url=sim.base_url, transport=transport, timeout=timeout)

    return make


def configure(sim: RunningSimulator, **knobs: Any) -> None:
    httpx.post(sim.url("/__sim/config"), json=knobs).raise_for_status()


def stats(sim: RunningSimulator) -> dict[str, Any]:
    result: dict[str, Any] = httpx.get(sim.url("/__sim/stats")).json()
    return result


def get_json(http: httpx.Client, path: str) -> dict[str, Any]:
    response = http.get(path)
    assert response.status_code == 200, response.text[:200]
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def within(size: int, target: int, tolerance: float = 0.15) -> bool:
    return abs(size - target) <= target * tolerance


def test_source_ip_is_the_clients_bound_address(sim: RunningSimulator, client: MakeClient) -> None:
    with client("127.0.0.5") as http:
        http.get(DETAILED.format(INACTIVE))
    assert list(stats(sim)["by_ip"]) == ["127.0.0.5"]


async def test_async_client_bound_address_is_its_source_ip(sim: RunningSimulator) -> None:
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.5")
    async with httpx.AsyncClient(base_url=sim.base_url, transport=transport) as http:
        assert (await http.get(DETAILED.format(INACTIVE))).status_code == 200
    assert stats(sim)["by_ip"]["127.0.0.5"]["count"] == 1


def test_detailed_shape_types_and_consistency(client: MakeClient) -> None:
    with client() as http:
        response = http.get(DETAILED.format(INACTIVE))
    body = response.json()
    assert within(len(response.content), 5_600)
    assert (body["type"], body["message"]) == ("success", "OK")
    data = body["data"]
    assert (data["personaId"], data["platformInt"]) == (INACTIVE, 1)
    assert data["statsTemplate"] == "profile.warsawdetailedstatspopulate"
    stats_ = data["generalStats"]
    assert len(stats_) == 191
    for key in ("kills", "deaths", "headshots", "shotsFired", "shotsHit", "timePlayed", "score"):
        assert isinstance(stats_[key], str) and stats_[key].isdigit(), key
    assert isinstance(stats_["kdRatio"], float) and isinstance(stats_["scorePerMinute"], int)
    assert 1.0 < stats_["accuracy"] < 60.0  # a percent here
    assert 0.0 <= stats_["assaultRifleAccuracy"] <= 1.0  # a fraction there
    assert set(stats_["kitScores"]) == {"1", "2", "8", "32", "2048"}
    assert int(stats_["kills"]) >= int(stats_["headshots"])
    assert int(stats_["shotsFired"]) >= int(stats_["shotsHit"])
    score_from_spm = stats_["scorePerMinute"] * int(stats_["timePlayed"]) / 60
    assert abs(score_from_spm - int(stats_["score"])) <= 0.01 * int(stats_["score"]) + 100
    # each class has its own score per minute, as on Battlelog (not one rate for all five)
    class_spm = {k: float(stats_["kitScores"][k]) / (float(t) / 60)
                 for k, t in stats_["kitTimes"].items() if float(t) >= 600}
    assert len(class_spm) >= 3 and max(class_spm.values()) > 1.1 * min(class_spm.values())


def test_weapons_and_vehicles_shapes_agree_with_detailed(client: MakeClient) -> None:
    with client() as http:
        weapons_response = http.get(WEAPONS.format(INACTIVE))
        vehicles_response = http.get(VEHICLES.format(INACTIVE))
        general = get_json(http, DETAILED.format(INACTIVE))["data"]["generalStats"]
    assert within(len(weapons_response.content), 586_000)
    assert within(len(vehicles_response.content), 453_000)
    weapons = weapons_response.json()["data"]
    assert weapons["statsTemplate"] == "profile.warsawweaponsstats"
    assert "weaponsByCategory" in weapons and "mainWeaponStatsMetadata" in weapons
    items = weapons["mainWeaponStats"]
    assert len(items) == 174
    for item in items:
        assert {"guid", "name", "slug", "category", "code", "kills", "accuracy"} <= set(item)
        assert item["accuracy"] is None or 0.0 <= item["accuracy"] <= 1.0
        if item["shotsFired"] is not None:
            assert item["shotsFired"] >= item["shotsHit"] and item["kills"] >= item["headshots"]
    melee = [i for i in items if i["category"] == "Special" and i["headshots"] is None]
    assert melee and all(i["shotsFired"] is None and i["accuracy"] is None for i in melee)
    vehicles = vehicles_response.json()["data"]["mainVehicleStats"]
    assert len(vehicles) == 82 and len({v["category"] for v in vehicles}) == 27
    assert all({"guid", "kills", "timeIn", "destroyXinY"} <= set(v) for v in vehicles)
    kills = sum(i["kills"] for i in items) + sum(v["kills"] for v in vehicles)
    assert abs(kills - int(general["kills"])) <= 0.02 * int(general["kills"]) + 60
    headshots = sum(i["headshots"] or 0 for i in items)
    assert abs(headshots - int(general["headshots"])) <= 0.02 * headshots + 60


def test_profile_shape(client: MakeClient) -> None:
    with client() as http:
        response = http.get(PROFILE.format(INACTIVE))
    assert 30_000 <= len(response.content) <= 65_000
    data = response.json()["data"]
    assert data["statsTemplate"] == "profile.warsawoverviewpopulate"
    assert (data["personaId"], data["platformInt"]) == (INACTIVE, 1)
    assert data["viewedPersonaInfo"]["personaId"] == str(INACTIVE)
    overview = data["overviewStats"]
    assert isinstance(overview["kills"], int) and isinstance(overview["kdRatio"], float)
    assert "killsPerMinute" not in overview  # the real overview has none (docs/battlelog.md)
    assert len(data["topWeapons"]) == 3 and len(data["topVehicles"]) == 3
    assert data["nextRankNeeded"]["level"] == min(overview["rank"] + 1, 140)


def test_url_variants_are_the_same_resource(client: MakeClient) -> None:
    variants = (
        f"/bf4/warsawWeaponsPopulateStats/{INACTIVE}/1/stats/",
        f"/bf4/en/warsawWeaponsPopulateStats/{INACTIVE}/1/stats",
        f"/bf4/warsawweaponspopulatestats/{INACTIVE}/1/?cacherand=638400000",
        f"/bf4/warsawWeaponsPopulateStats/{INACTIVE}/1",
    )
    with client() as http:
        bodies = {http.get(path).content for path in variants}
        assert http.get("/bf4/warsawWeaponsPopulateStats/x/1/").status_code == 404
    assert len(bodies) == 1


def test_search_and_soldiers_agree_with_persona_ids(client: MakeClient) -> None:
    name = "Someone-Real"
    with client() as http:
        body = http.post("/bf4/search/query/", data={"query": name}).json()
        assert (body["type"], body["message"]) == ("success", "RESULT")
        hits = [h for h in body["data"] if h["personaName"] == name]
        hits = [h for h in hits if any(int(g) & 2048 for g in h["games"].values())]
        assert hits
        expected = set()
        for hit in hits:
            (platform_key,) = hit["games"]
            platform = Platform.from_battlelog_int(int(platform_key))
            assert hit["personaId"] == str(persona_id_for(name, platform))
            assert hit["namespace"] == NAMESPACES[platform]
            expected.add((int(hit["personaId"]), platform.battlelog_int))
        soldiers = get_json(http, f"/bf4/user/overviewBoxStats/{hits[0]['userId']}/")
    box = soldiers["data"]["soldiersBox"]
    assert {(int(s["persona"]["personaId"]), s["platform"]) for s in box} == expected


async def test_search_check_sum_with_the_real_client(sim: RunningSimulator) -> None:
    """A search needing the check-sum: refused (retryable) without a session, served with the
    session the start page opened; a session the site forgot is dropped after the refusal."""
    configure(sim, search_check_sum="required")
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        refused = await battlelog.search("Someone-Real")
        opened = await battlelog.open_session()
        served = await battlelog.search("Someone-Real")
        httpx.post(sim.url("/__sim/reset")).raise_for_status()  # the site forgets its sessions
        stale = await battlelog.search("Someone-Real")
        check_sum_after_refusal = battlelog.check_sum
    assert refused.error_class is ErrorClass.UNRECOGNIZED and "search refused" in refused.message
    assert refused.details["check_sum"] == 0
    assert isinstance(opened.parsed, Session) and len(opened.parsed.check_sum) == 10
    assert opened.details["kind"] == "session" and opened.http_status == 200
    assert served.ok and served.details["check_sum"] == 1
    assert isinstance(served.parsed, tuple) and served.parsed
    assert all(hit.name == "Someone-Real" for hit in served.parsed)
    assert stale.error_class is ErrorClass.UNRECOGNIZED and check_sum_after_refusal is None
    counted = stats(sim)  # since the reset: the stale search only
    assert {k: v for k, v in counted["by_resource"].items() if v} == {"search": 1}
    assert {k: v for k, v in counted["by_outcome"].items() if v} == {"bad_check_sum": 1}


def test_cli_search_with_a_session(sim: RunningSimulator) -> None:
    from click.testing import CliRunner

    from bf4ps.cli.battlelog import group

    configure(sim, search_check_sum="required")
    args = ["fetch", "--resource", "search", "--name", "Someone-Real", "--base-url",
            sim.base_url, "--json"]
    refused = CliRunner().invoke(group, args)
    served = CliRunner().invoke(group, [*args, "--session"])
    assert refused.exit_code == 1 and "search refused" in refused.output
    assert served.exit_code == 0, served.output
    assert "Someone-Real" in served.output
    counted = stats(sim)["by_resource"]
    assert (counted["index"], counted["search"]) == (1, 2)


def test_same_persona_same_values_and_active_ones_grow(
    sim: RunningSimulator, client: MakeClient
) -> None:
    with client() as http:
        first, second = (http.get(DETAILED.format(INACTIVE)).content for _ in range(2))
        assert first == second
        configure(sim, speed=1_000_000.0)
        before = get_json(http, DETAILED.format(ACTIVE))["data"]["generalStats"]
        time.sleep(0.2)
        after = get_json(http, DETAILED.format(ACTIVE))["data"]["generalStats"]
    assert int(after["timePlayed"]) > int(before["timePlayed"])
    assert int(after["kills"]) >= int(before["kills"])
    assert int(after["score"]) > int(before["score"])


def test_back_to_back_requests_of_one_ip_violate(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, min_interval=0.5)
    with client("127.0.0.2") as second_ip, client("127.0.0.3") as third_ip:
        assert second_ip.get(DETAILED.format(INACTIVE)).status_code == 200
        assert second_ip.get(DETAILED.format(INACTIVE)).status_code == 403
        assert third_ip.get(DETAILED.format(INACTIVE)).status_code == 200
    counters = stats(sim)
    assert counters["by_ip"]["127.0.0.2"]["violations"] == 1
    assert counters["by_ip"]["127.0.0.3"]["violations"] == 0
    (violation,) = counters["violations"]["recent"]
    assert violation["ip"] == "127.0.0.2" and violation["rule"] == "interval"
    assert 0.0 < violation["early_by_seconds"] <= 0.5
    assert counters["by_outcome"]["throttled"] == 1


def test_correctly_spaced_requests_do_not_violate(
    sim: RunningSimulator, client: MakeClient
) -> None:
    configure(sim, min_interval=0.3)
    with client("127.0.0.4") as http:
        for _ in range(3):
            assert http.get(DETAILED.format(INACTIVE)).status_code == 200
            time.sleep(0.32)
    counters = stats(sim)
    assert counters["violations"]["total"] == 0
    assert counters["by_ip"]["127.0.0.4"]["min_spacing_seconds"] >= 0.3


def test_tolerance_and_count_only_mode(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, min_interval=0.6, tolerance=0.3, throttle_status="none")
    with client("127.0.0.9") as http:
        codes = [http.get(DETAILED.format(INACTIVE)).status_code]
        time.sleep(0.4)  # < 0.2 s early: within the tolerance
        codes.append(http.get(DETAILED.format(INACTIVE)).status_code)
        codes.append(http.get(DETAILED.format(INACTIVE)).status_code)  # ~0.6 s early
    assert codes == [200, 200, 200]  # "none": violations are counted, never throttled
    counters = stats(sim)
    assert counters["violations"]["total"] == 1
    assert counters["by_outcome"]["ok"] == 3


def test_window_limit(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, window_requests=3, window_seconds=5.0)
    with client("127.0.0.6") as http:
        codes = [http.get(DETAILED.format(INACTIVE)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 403]
    assert stats(sim)["violations"]["recent"][0]["rule"] == "window"


@pytest.mark.parametrize(("mode", "status"), [("429", 429), ("html", 200)])
def test_throttle_modes(sim: RunningSimulator, client: MakeClient, mode: str, status: int) -> None:
    configure(sim, min_interval=1.0, throttle_status=mode)
    with client("127.0.0.7") as http:
        http.get(DETAILED.format(INACTIVE))
        response = http.get(DETAILED.format(INACTIVE))
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert "too many requests" in response.text.lower()


def test_penalty_cool_down(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, min_interval=0.3, penalty=1.0)
    with client("127.0.0.8") as http:
        codes = [http.get(DETAILED.format(INACTIVE)).status_code for _ in range(2)]
        time.sleep(0.4)  # spaced, but still inside the cool-down
        codes.append(http.get(DETAILED.format(INACTIVE)).status_code)
        time.sleep(0.8)
        codes.append(http.get(DETAILED.format(INACTIVE)).status_code)
    assert codes == [200, 403, 403, 200]
    counters = stats(sim)
    assert counters["violations"]["total"] == 1
    assert counters["by_outcome"]["penalty"] == 1
    assert counters["by_ip"]["127.0.0.8"]["penalty_answers"] == 1


def _is_error_envelope(response: httpx.Response) -> bool:
    return response.status_code == 200 and response.json()["type"] == "error"


FAULTS: list[tuple[str, str, Callable[[httpx.Response], bool]]] = [
    ("fault_5xx", "server_error", lambda r: r.status_code in (500, 503)),
    ("fault_html", "html_error", lambda r: r.status_code == 200 and "errorpage" in r.text),
    ("fault_error", "type_error", _is_error_envelope),
    ("fault_unknown", "unknown_persona", lambda r: r.status_code == 404),
    ("fault_unknown_error", "unknown_error", _is_error_envelope),
    ("fault_soft_throttle", "soft_throttle",
     lambda r: r.status_code == 200 and (r.content == b"null" or r.json()["data"] == {})),
    (
        "fault_missing_general",
        "missing_general",
        lambda r: (
            r.json()["type"] == "success"
            and not isinstance(r.json()["data"].get("generalStats"), dict)
        ),
    ),
]


@pytest.mark.parametrize(("knob", "outcome", "check"), FAULTS, ids=[f[0] for f in FAULTS])
def test_faults(
    sim: RunningSimulator,
    client: MakeClient,
    knob: str,
    outcome: str,
    check: Callable[[httpx.Response], bool],
) -> None:
    configure(sim, **{knob: 1.0})
    with client() as http:
        assert check(http.get(DETAILED.format(INACTIVE)))
    assert stats(sim)["by_outcome"][outcome] == 1


def test_timeout_fault_is_counted_at_arrival(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, fault_timeout=1.0)  # held 120 s / speed = 0.6 s, longer than the client waits
    with client(timeout=0.2) as http, pytest.raises(httpx.ReadTimeout):
        http.get(WEAPONS.format(INACTIVE))
    assert stats(sim)["by_outcome"]["timeout"] == 1


def test_unknown_personas_are_always_unknown(sim: RunningSimulator, client: MakeClient) -> None:
    with client() as http:
        response = http.get(DETAILED.format(UNKNOWN))
    assert response.status_code == 404 and "that page doesn't exist" in response.text
    assert stats(sim)["by_outcome"]["unknown_persona"] == 1


def test_fleet_window_counting(sim: RunningSimulator, client: MakeClient) -> None:
    configure(sim, fleet_budget=3, fleet_window=30.0)
    for n in range(2, 7):
        with client(f"127.0.0.{n}") as http:
            assert http.get(DETAILED.format(INACTIVE)).status_code == 200  # still served
    fleet = stats(sim)["fleet"]
    assert (fleet["violations"], fleet["max_in_window"], fleet["budget"]) == (2, 5, 3)


def test_config_endpoint_and_reset(sim: RunningSimulator, client: MakeClient) -> None:
    current = httpx.get(sim.url("/__sim/config")).json()
    assert current["speed"] == SPEED and current["port"] == 0
    assert httpx.post(sim.url("/__sim/config"), json={"bogus": 1}).status_code == 400
    assert httpx.post(sim.url("/__sim/config"), json={"fault_5xx": 2}).status_code == 400
    assert httpx.post(sim.url("/__sim/config"), json={"port": 1}).status_code == 400
    with client() as http:
        http.get(DETAILED.format(INACTIVE))
    assert stats(sim)["requests_total"] == 1
    httpx.post(sim.url("/__sim/reset")).raise_for_status()
    after = stats(sim)
    assert after["requests_total"] == 0 and after["by_ip"] == {}


def test_child_process_simulator_serves_and_stops() -> None:
    with spawn(SimConfig(port=0, speed=SPEED, min_interval=0.0)) as process:
        transport = httpx.HTTPTransport(local_address="127.0.0.7")
        with httpx.Client(base_url=process.base_url, transport=transport) as http:
            assert http.get(DETAILED.format(INACTIVE)).status_code == 200
        assert list(httpx.get(process.url("/__sim/stats")).json()["by_ip"]) == ["127.0.0.7"]
    assert process.process.poll() is not None


# --- the knobs of real-Battlelog behaviours, with the real client ----------------------------


async def test_session_page_redirects_are_followed_keeping_every_cookie(
        sim: RunningSimulator) -> None:
    """The start page bounces twice, each hop setting a cookie: all are kept; a refused search
    then drops only the session cookie; more hops than the client follows is a retryable
    failure, not an exception."""
    configure(sim, session_redirects=2, search_check_sum="required")
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        opened = await battlelog.open_session()
        names = {c.name for c in battlelog._http.cookies.jar}
        httpx.post(sim.url("/__sim/reset")).raise_for_status()  # the site forgets the session
        refused = await battlelog.search("Someone-Real")
        after = {c.name for c in battlelog._http.cookies.jar}
        configure(sim, session_redirects=5)
        too_many = await battlelog.open_session()
    assert isinstance(opened.parsed, Session) and opened.http_status == 200
    assert names == {"bm_hop0", "bm_hop1", "beaker.session.id"}
    assert refused.error_class is ErrorClass.UNRECOGNIZED
    assert after == {"bm_hop0", "bm_hop1"}  # only the session cookie was dropped
    assert too_many.error_class is ErrorClass.SERVER and not too_many.ok
    # since the reset: the refused search, then 4 start-page answers (3 redirects followed)
    assert stats(sim)["by_resource"]["index"] == 4


async def test_wildcards_are_escaped_so_a_capped_list_keeps_the_soldier(
        sim: RunningSimulator, client: MakeClient) -> None:
    """`_` is a search wildcard: unescaped, a list capped at 5 fills with other soldiers and
    the exact one is missing; the client escapes it and finds the soldier."""
    configure(sim, search_cap=5)
    name = next(n for n in (f"Under_Score{i}" for i in range(100))
                if Platform.PC in name_platforms(n))
    with client() as http:
        raw = http.post("/bf4/search/query/", data={"query": name}).json()["data"]
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        found = await battlelog.search(name)
    assert len(raw) == 5 and name not in {h["personaName"] for h in raw}
    assert isinstance(found.parsed, tuple) and found.parsed
    assert {h.name for h in found.parsed} == {name}
    assert {h.persona_id for h in found.parsed} >= {persona_id_for(name, Platform.PC)}


async def test_a_search_login_wall_is_unavailable_not_empty_and_a_login_passes_it(
        sim: RunningSimulator) -> None:
    nobody_name = next(n for n in (f"Nobody{i}" for i in range(5000))
                       if search_body(n).endswith(b'"data":[]}'))
    configure(sim, login_wall="search")
    session = httpx.post(sim.url("/__sim/login")).json()["session"]
    async with BattlelogClient(sim.base_url, "bf4ps-test") as anonymous:
        await anonymous.open_session()
        walled = await anonymous.search("Someone-Real")
    async with BattlelogClient(sim.base_url, "bf4ps-test") as logged_in:
        logged_in.use_session(session)
        served = await logged_in.search("Someone-Real")
        nobody = await logged_in.search(nobody_name)  # Battlelog has nobody of that name
        unchecked = nobody.error_class
        believed = await logged_in.confirm_empty(nobody, "Someone-Real")
    assert walled.error_class is ErrorClass.UNRECOGNIZED and walled.parsed is None
    assert walled.details["signal"] == "unverified_empty"
    assert "search unavailable" in walled.message
    assert served.ok and served.parsed
    # an empty answer is believed only once the canary search found its soldier
    assert unchecked is ErrorClass.UNRECOGNIZED
    assert believed is nobody and believed.ok and believed.parsed == ()
    assert believed.details["canary"] == "passed" and "signal" not in believed.details
    assert stats(sim)["by_outcome"]["login_wall"] == 1


async def test_stats_login_wall_unknown_wording_and_soft_throttles_are_classified(
        sim: RunningSimulator) -> None:
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        configure(sim, login_wall="stats")
        walled = await battlelog.fetch(Resource.DETAILED, INACTIVE, Platform.PC)
        configure(sim, login_wall="none", fault_unknown_error=1.0,
                  unknown_error_message="Something new happened")
        unknown = await battlelog.fetch(Resource.PROFILE, INACTIVE, Platform.PC)
        configure(sim, fault_unknown_error=0.0, fault_soft_throttle=1.0)
        soft = [await battlelog.fetch(Resource.DETAILED, INACTIVE, Platform.PC)
                for _ in range(4)]
    assert (walled.error_class, walled.details["signal"]) == (ErrorClass.UNRECOGNIZED,
                                                              "login_wall")
    assert (unknown.error_class, unknown.details["signal"]) == (ErrorClass.UNRECOGNIZED,
                                                                "unknown_error")
    assert "Something new happened" in unknown.message
    assert all(s.error_class is ErrorClass.MALFORMED and s.details["soft_throttle"] == 1
               for s in soft)
    assert not any(slows_egress(s) for s in soft)  # alone, none does: a run of them does


async def test_search_trust_is_per_answer_an_empty_answer_after_a_good_one(
        sim: RunningSimulator) -> None:
    """The simulator's empty_search_after knob, switched at run time over its config endpoint:
    after one search answered personas, every search answers an empty list. A session that
    just found personas is no reason to believe the next empty answer: it stays "search
    unavailable" until a check search for a soldier known to exist finds that soldier, and
    here the check comes back empty too. Switched off, the same check believes a real empty
    answer."""
    other = next(n for n in (f"Real{i}" for i in range(1000)) if name_platforms(n))
    nobody_name = next(n for n in (f"Nobody{i}" for i in range(5000))
                       if search_body(n).endswith(b'"data":[]}'))
    configure(sim, empty_search_after=1)
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        await battlelog.open_session()
        good = await battlelog.search("Someone-Real")
        lied = await battlelog.search(other)  # exists, answered empty
        check_sum = battlelog.check_sum  # kept for the check search
        doubted = await battlelog.confirm_empty(lied, "Someone-Real")
        dropped = battlelog.check_sum
        configure(sim, empty_search_after=None)
        await battlelog.open_session()
        nobody = await battlelog.confirm_empty(await battlelog.search(nobody_name),
                                               "Someone-Real")
    assert good.ok and good.parsed
    assert lied.error_class is ErrorClass.UNRECOGNIZED and check_sum is not None
    assert doubted.error_class is ErrorClass.UNRECOGNIZED and doubted.parsed is None
    assert "search unavailable" in doubted.message and "Someone-Real" in doubted.message
    assert doubted.details["canary"] == "failed" and dropped is None
    assert nobody.ok and nobody.parsed == () and nobody.details["canary"] == "passed"
    assert stats(sim)["by_outcome"]["empty_search"] == 2  # the lie and its check
    bad = httpx.post(sim.url("/__sim/config"), json={"empty_search_after": -1})
    assert bad.status_code == 400 and "empty_search_after" in bad.text


async def test_a_fresh_reset_makes_the_world_new_with_the_knobs_given(
        sim: RunningSimulator, client: MakeClient) -> None:
    """What lets one simulator serve a worker's tests one after another (tests/fleet.py): the
    reset with `fresh` knobs is a newly started simulator — defaults plus those knobs, no
    counts, no logins — on the same port; a malformed one changes nothing."""
    configure(sim, login_wall="search", min_interval=2.0)
    session = httpx.post(sim.url("/__sim/login")).json()["session"]
    with client() as http:
        http.get(f"/bf4/warsawdetailedstatspopulate/{ACTIVE}/1/")
    assert sum(stats(sim)["by_resource"].values()) == 1
    for bad in (b"[]", b'{"fresh": 1}', b'{"fresh": {"port": 1}}', b"{"):
        refused = httpx.post(sim.url("/__sim/reset"), content=bad)
        assert refused.status_code == 400 and refused.json()["error"], bad
    assert httpx.get(sim.url("/__sim/config")).json()["min_interval"] == 2.0
    made = httpx.post(sim.url("/__sim/reset"), json={"fresh": {"speed": 7.0}})
    assert made.status_code == 200
    fresh = httpx.get(sim.url("/__sim/config")).json()
    assert fresh == SimConfig(host=fresh["host"], port=fresh["port"], speed=7.0).as_dict()
    assert sum(stats(sim)["by_resource"].values()) == 0
    configure(sim, login_wall="search")
    async with BattlelogClient(sim.base_url, "bf4ps-test") as forgotten:
        forgotten.use_session(session)  # the old world's login is not this one's
        walled = await forgotten.search("Someone-Real")
    # the wall's empty answer, not the soldiers found (and, unchecked, not believed either)
    assert walled.parsed is None and walled.error_class is ErrorClass.UNRECOGNIZED
    assert walled.details["signal"] == "unverified_empty"
    assert stats(sim)["by_outcome"]["login_wall"] == 1
