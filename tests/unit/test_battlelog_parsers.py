"""The Battlelog parsers against the real captured responses (read through tests/captures.py).

Every expected value below was read from the fixture files themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bf4ps.battlelog.coerce import to_float, to_id, to_int, to_text
from bf4ps.battlelog.endpoints import (
    account_soldiers_path,
    check_sum_of,
    search_form,
    stats_path,
)
from bf4ps.battlelog.models import (
    BattlelogParseError,
    LinkedSoldier,
    Progress,
    SearchHit,
    TopItem,
)
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import (
    parse_vehicle_batch,
    parse_vehicles,
    parse_weapon_batch,
    parse_weapons,
)
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.battlelog.parse_search import parse_account_soldiers, parse_search
from bf4ps.domain import ErrorClass, Resource
from tests import captures

REPO_ROOT = Path(__file__).resolve().parents[2]
captures.skip_module_without()
FIXTURES = captures.captures_dir()

DETAILS_2013 = "2013-bf4intel/details-stats.json"
OVERVIEW = "2013-bf4intel/soldieroverview.json"
WEAPONS = "2013-bf4intel/weapon-stats.json"
VEHICLES = "2013-bf4intel/vehicles-stats.json"
LISTING = "2013-bf4intel/soldier_listing.json"
BOND = "2020-battlelog-net/detailed-TheOnlyBond.json"
IDCSANDER = "2020-battlelog-net/detailed-idcsander.json"


def raw(name: str) -> bytes:
    return captures.read(name)


def document(name: str) -> Any:
    return json.loads(raw(name))


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


# --- every capture ---------------------------------------------------------------------------

# each JSON capture in the folder -> the parser that reads it (None: another game's answer, which
# shares BF4's envelope; see the folder's README)
EVERY_CAPTURE: dict[str, Any] = {
    DETAILS_2013: parse_detailed,
    BOND: parse_detailed,
    IDCSANDER: parse_detailed,
    OVERVIEW: parse_profile,
    WEAPONS: parse_weapons,
    VEHICLES: parse_vehicles,
    LISTING: parse_account_soldiers,
    "2013-bf4intel-x360-unlocks/weapon-unlocks.json": parse_weapons,
    "2013-bf4intel-x360-unlocks/vehicle-unlocks.json": parse_vehicles,
    "2020-cxcorp-unlocks/weapon-stats.json": parse_weapons,
    "2021-battlelogscraps/overviewBoxStats-2832658994883918489.body.json": parse_account_soldiers,
    "2021-battlelogscraps/bf3-overviewBoxStats-3307924356088947575.body.json":
        parse_account_soldiers,
    "2020-battlelog-net-other-games/bf3-overviewPopulateStats-TheOnlyBond.json": None,
    "2020-battlelog-net-other-games/bfh-detailedstatspopulate-TheOnlyBond.json": None,
}


def test_every_capture_in_the_folder_has_a_parser_case() -> None:
    """A capture added to the folder shows here until a parser case reads it."""
    present = sorted(str(p.relative_to(FIXTURES)) for p in captures.json_files())
    assert present == sorted(EVERY_CAPTURE)


@pytest.mark.parametrize("name", sorted(n for n, parse in EVERY_CAPTURE.items() if parse))
def test_every_bf4_capture_parses(name: str) -> None:
    parsed = EVERY_CAPTURE[name](raw(name))
    assert parsed or name.startswith("2021-battlelogscraps/bf3-")  # a BF3-only user: no soldier


# --- detailed --------------------------------------------------------------------------------

DETAILED_EXPECTED = {
    # name: (persona, kills, deaths, score, time played, rank, skill, accuracy %, SPM)
    DETAILS_2013: (200661244, 4836, 3979, 4554408, 535037, 69, 244, 11.2203783594, 510.0),
    BOND: (1486274664, 14346, 10103, 17654444, 934227, 123, 283, 17.1735358914, 1133.0),
    IDCSANDER: (1931370673, 730, 1191, 2301998, 86693, 46, 189, 11.4432989691, 1593.0),
}


@pytest.mark.parametrize("name", list(DETAILED_EXPECTED))
def test_detailed_headline_values(name: str) -> None:
    persona, kills, deaths, score, played, rank, skill, accuracy, spm = DETAILED_EXPECTED[name]
    stats = parse_detailed(raw(name), persona_id=persona, platform_int=1)
    assert (stats.kills, stats.deaths, stats.score) == (kills, deaths, score)
    assert (stats.time_played_seconds, stats.rank, stats.skill) == (played, rank, skill)
    assert stats.accuracy_percent == pytest.approx(accuracy)
    assert stats.score_per_minute == spm


def test_detailed_2013_every_mapped_field() -> None:
    stats = parse_detailed(raw(DETAILS_2013))
    assert stats.total_score == 4554408 and stats.rank_score == 4528220
    assert stats.combat_score == 2635245 and stats.kill_assists == 172
    assert (stats.headshots, stats.shots_fired, stats.shots_hit) == (443, 315943, 35450)
    assert stats.longest_headshot == 270.01
    assert stats.highest_kill_streak == 23  # killStreakBonus
    assert (stats.nemesis_kills, stats.highest_nemesis_streak) == (96, 11)
    assert (stats.num_rounds, stats.wins, stats.losses) == (395, 191, 185)
    assert stats.kills_per_minute is None  # not in the 2014 capture: not invented
    assert stats.quit_percentage == pytest.approx(4.8101265823)
    assert (stats.revives, stats.heals, stats.repairs, stats.resupplies) == (185, 1105, 1252, 354)
    assert (stats.avenger_kills, stats.savior_kills, stats.suppression_assists) == (274, 133, 90)
    assert (stats.flags_captured, stats.flags_defended, stats.dogtags_taken) == (1222, 878, 242)
    assert (stats.vehicles_destroyed, stats.vehicle_damage) == (918, 1045)
    assert (stats.assault_score, stats.engineer_score, stats.support_score) == (
        364040,
        434771,
        232170,
    )
    assert (stats.recon_score, stats.commander_score) == (447509, 113125)
    assert (stats.squad_score, stats.vehicle_score) == (253769, 1043630)
    assert (stats.award_score, stats.unlock_score) == (1870650, 22400)
    assert (stats.assault_time_seconds, stats.engineer_time_seconds) == (45066, 57067)
    assert (stats.recon_time_seconds, stats.support_time_seconds) == (73782, 33886)
    assert stats.commander_time_seconds == 42689
    assert (stats.conquest_score, stats.rush_score, stats.domination_score) == (
        1074540,
        28330,
        12777,
    )
    assert (stats.team_deathmatch_score, stats.squad_deathmatch_score) == (400, 400)
    assert (stats.obliteration_score, stats.defuse_score) == (39265, 0)
    # Modes added after 2014 are absent from this capture: None, not 0.
    assert stats.capture_the_flag_score is None and stats.air_superiority_score is None
    assert stats.carrier_assault_score is None and stats.chain_link_score is None


def test_detailed_2020_modes_and_float_zero_counters() -> None:
    bond = parse_detailed(raw(BOND))
    assert (bond.capture_the_flag_score, bond.air_superiority_score) == (2850, 3970)
    assert (bond.chain_link_score, bond.carrier_assault_score) == (52805, 0)
    assert bond.kills_per_minute == 0.92
    assert (bond.commander_time_seconds, bond.highest_nemesis_streak) == (7550, 28)
    idc = parse_detailed(raw(IDCSANDER))
    assert idc.nemesis_kills == 0  # sent as 0.0
    assert idc.commander_score == 0 and idc.commander_time_seconds == 0  # int 0 in kit maps


def test_detailed_carrier_assault_sums_large_and_small_without_plain_key() -> None:
    body = document(IDCSANDER)
    general = body["data"]["generalStats"]
    del general["carrierassault"]
    general["carrierassaultlarge"], general["carrierassaultsmall"] = "1200", 300.0
    assert parse_detailed(encode(body)).carrier_assault_score == 1500
    general["carrierassault"] = "7"
    assert parse_detailed(encode(body)).carrier_assault_score == 7


def test_detailed_class_score_falls_back_to_kit_scores() -> None:
    body = document(BOND)
    del body["data"]["generalStats"]["recon"]
    assert parse_detailed(encode(body)).recon_score == 1053320  # kitScores["8"]


@pytest.mark.parametrize("general", [None, [], "x", 0, "missing"])
def test_detailed_without_object_general_stats_is_malformed(general: Any) -> None:
    body = document(DETAILS_2013)
    if general == "missing":
        del body["data"]["generalStats"]
    else:
        body["data"]["generalStats"] = general
    with pytest.raises(BattlelogParseError) as caught:
        parse_detailed(encode(body))
    assert caught.value.error_class is ErrorClass.MALFORMED
    assert "generalStats" in str(caught.value)


def test_detailed_identity_mismatch_is_unrecognized() -> None:
    parse_detailed(raw(BOND), persona_id=1486274664, platform_int=1)
    for persona, platform in ((1486274665, 1), (1486274664, 32)):
        with pytest.raises(BattlelogParseError) as caught:
            parse_detailed(raw(BOND), persona_id=persona, platform_int=platform)
        assert caught.value.error_class is ErrorClass.UNRECOGNIZED
        assert caught.value.signal == "other_soldier"


def test_identity_accepts_string_ids_beyond_32_bits() -> None:
    body = document(BOND)
    body["data"]["personaId"] = "1003662931478"
    stats = parse_detailed(encode(body), persona_id=1003662931478, platform_int=1)
    assert stats.kills == 14346


# --- profile (overview) ----------------------------------------------------------------------


def test_profile_values() -> None:
    profile = parse_profile(raw(OVERVIEW), persona_id=177958806, platform_int=2)
    assert profile.battlelog_user_id == 2832658801548551060
    assert profile.clan_tag == "N20"
    assert (profile.rank, profile.rank_name) == (12, "WARSAW_ID_P_RANK12_NAME")
    assert (profile.rank_score, profile.next_rank_score) == (242104, 262000)
    assert (profile.skill, profile.score, profile.kills, profile.deaths) == (166, 242104, 303, 382)
    assert profile.time_played_seconds == 54059
    assert (profile.wins, profile.losses, profile.score_per_minute) == (23, 23, 269.0)
    assert profile.accuracy_percent == pytest.approx(5.4344667248)
    assert profile.kills_per_minute is None
    assert profile.top_weapons[0] == TopItem(
        "D74B74A8-8266-490A-A390-7F73BE3A0401", "WARSAW_ID_P_WNAME_CSLR4", "cs-lr4", 129
    )
    assert [item.slug for item in profile.top_weapons] == ["cs-lr4", "p226", "bayonet"]
    assert [item.kills for item in profile.top_vehicles] == [9, 5, 3]
    assert profile.top_vehicles[1].slug == "ah-6j-little-bird"
    assert len(profile.progress) == 8
    assert Progress("dogtags", 259, 562) in profile.progress
    assert Progress("ribbons", 17, 45) in profile.progress
    assert profile.linked_soldiers == ()


def test_profile_null_persona_info_means_no_tag_and_never_the_viewers_user_id() -> None:
    body = document(OVERVIEW)
    assert body["data"]["currentUserId"]  # the viewer's account: never the soldier's
    body["data"]["viewedPersonaInfo"] = None
    profile = parse_profile(encode(body))
    assert profile.clan_tag is None
    assert profile.battlelog_user_id is None
    body["data"]["viewedPersonaInfo"] = {"tag": "  ", "userId": None}
    assert parse_profile(encode(body)).clan_tag is None


def test_profile_without_overview_stats_is_malformed() -> None:
    body = document(OVERVIEW)
    body["data"]["overviewStats"] = []
    with pytest.raises(BattlelogParseError, match="overviewStats"):
        parse_profile(encode(body))


# --- weapons ---------------------------------------------------------------------------------


def test_weapons_count_and_values() -> None:
    batch = parse_weapon_batch(raw(WEAPONS), persona_id=200661244, platform_int=1)
    assert (len(batch.items), batch.skipped) == (136, 0)
    assert sum(item.kills or 0 for item in batch.items) == 1661
    assert len({item.category for item in batch.items}) == 13
    by_slug = {item.slug: item for item in batch.items}
    lmg = by_slug["u-100-mk5"]
    assert (lmg.guid, lmg.name, lmg.category, lmg.code) == (
        "D245AAAD-A451-45FD-AFC5-851D966B5227",
        "WARSAW_ID_P_WNAME_ULTIM",
        "LMGs",
        "wL",
    )
    assert (lmg.kills, lmg.headshots, lmg.shots_fired, lmg.shots_hit) == (268, 35, 8188, 892)
    assert lmg.accuracy_fraction == pytest.approx(0.1089399121)
    assert (lmg.time_equipped_seconds, lmg.service_stars) == (17329, 2)
    assert lmg.service_stars_progress == 68.0
    sniper = by_slug["cs-lr4"]
    assert (sniper.kills, sniper.headshots, sniper.accuracy_fraction) == (205, 30, 0.3313106796)
    c4 = by_slug["c4-explosive"]
    assert (c4.kills, c4.headshots, c4.shots_fired) == (47, 0, 306)  # headshots sent as 0.0


def test_weapons_melee_nulls_stay_none() -> None:
    by_slug = {item.slug: item for item in parse_weapons(raw(WEAPONS))}
    bayonet = by_slug["bayonet"]
    assert (bayonet.kills, bayonet.category) == (115, "Special")
    assert bayonet.headshots is None and bayonet.shots_fired is None
    assert bayonet.shots_hit is None and bayonet.accuracy_fraction is None
    assert bayonet.time_equipped_seconds is None
    assert by_slug["acb-90"].kills == 0  # sent as 0.0


def test_weapons_skip_and_count_entries_without_guid_or_repeated() -> None:
    body = document(WEAPONS)
    items = body["data"]["mainWeaponStats"]
    del items[0]["guid"]
    items[1]["guid"] = 12
    items.append(dict(items[2]))  # repeated guid
    items.append("not an item")
    batch = parse_weapon_batch(encode(body))
    assert (len(batch.items), batch.skipped) == (134, 4)


@pytest.mark.parametrize("value", [None, {}, "[]", 3])
def test_weapons_without_list_is_malformed(value: Any) -> None:
    body = document(WEAPONS)
    body["data"]["mainWeaponStats"] = value
    with pytest.raises(BattlelogParseError, match="mainWeaponStats"):
        parse_weapons(encode(body))


def test_weapons_empty_list_is_valid() -> None:
    body = document(WEAPONS)
    body["data"]["mainWeaponStats"] = []
    assert parse_weapons(encode(body)) == ()


# --- vehicles --------------------------------------------------------------------------------


def test_vehicles_count_and_values() -> None:
    batch = parse_vehicle_batch(raw(VEHICLES), persona_id=200661244, platform_int=1)
    assert (len(batch.items), batch.skipped) == (53, 0)
    assert sum(item.kills or 0 for item in batch.items) == 1139
    categories = {item.category for item in batch.items}
    assert len(categories) == 15
    assert "Weapon Stationary " in categories and "Soldier Equiment" in categories
    by_slug = {item.slug: item for item in batch.items}
    bird = by_slug["ah-6j-little-bird"]
    assert (bird.guid, bird.code, bird.category) == (
        "FD8AB748-FF4D-11DD-A7B1-F7C6DEEC9D32",
        "shAH6",
        "Vehicle Air Helicopter Scout",
    )
    assert (bird.kills, bird.time_in_seconds, bird.destroy_x_in_y) == (212, 12859, 59)
    assert (bird.service_stars, bird.service_stars_progress) == (9, 50.0)
    btr = batch.items[0]
    assert (btr.slug, btr.name, btr.kills, btr.time_in_seconds) == (
        "btr-90",
        "WARSAW_ID_P_XP1_VNAME_BTR90",
        43,
        3118,
    )
    pantsir = by_slug["pantsir-s1"]  # every counter sent as 0.0
    assert (pantsir.kills, pantsir.time_in_seconds, pantsir.destroy_x_in_y) == (0, 0, 0)


def test_vehicles_without_list_is_malformed() -> None:
    body = document(VEHICLES)
    del body["data"]["mainVehicleStats"]
    with pytest.raises(BattlelogParseError, match="mainVehicleStats") as caught:
        parse_vehicles(encode(body))
    assert caught.value.error_class is ErrorClass.MALFORMED


# --- account soldiers and search -------------------------------------------------------------


def test_account_soldiers_keep_bf4_only() -> None:
    boxes = document(LISTING)["data"]["soldiersBox"]
    assert len(boxes) == 2  # the same persona for BF4 (game 2048) and BF3 (game 2)
    assert parse_account_soldiers(raw(LISTING)) == (LinkedSoldier(177958806, "NINETWOZERO", 2),)


def test_account_soldiers_without_list_is_malformed() -> None:
    with pytest.raises(BattlelogParseError, match="soldiersBox"):
        parse_account_soldiers(raw(DETAILS_2013))


def search_body(*personas: Any) -> bytes:
    return encode({"type": "success", "message": "RESULT", "data": list(personas)})


def listing_persona() -> dict[str, Any]:
    persona: dict[str, Any] = document(LISTING)["data"]["soldiersBox"][0]["persona"]
    return persona


def test_search_filters_bf4_platforms_and_exact_name() -> None:
    console = listing_persona()  # games {"64": "0", "2": "2050"}: BF4 on xbox360 only
    pc = {
        "personaId": "1003662931478",
        "personaName": "ninetwozero",
        "namespace": "cem_ea_id",
        "games": {"1": 2048},
    }
    other = {"personaId": "5", "personaName": "NINETWOZERO2", "games": {"1": "2050"}}
    bf3 = {"personaId": "6", "personaName": "NineTwoZero", "games": {"1": "2"}}
    hits = parse_search(search_body(console, pc, other, bf3, "junk"), "NineTwoZero")
    assert hits == (
        SearchHit(177958806, "NINETWOZERO", 2, "xbox"),
        SearchHit(1003662931478, "ninetwozero", 1, "cem_ea_id"),
    )
    assert len(parse_search(search_body(console, pc, other, bf3))) == 3


def test_search_uses_games_json_when_games_is_absent() -> None:
    persona = listing_persona()
    del persona["games"]
    assert parse_search(search_body(persona), "ninetwozero")[0].platform_int == 2


def test_search_throttle_and_bad_shapes() -> None:
    throttled = encode({"type": "error", "message": "TOOMANYSEARCHES", "data": None})
    with pytest.raises(BattlelogParseError) as caught:
        parse_search(throttled, "x")
    assert caught.value.error_class is ErrorClass.THROTTLE
    with pytest.raises(BattlelogParseError, match="not a list"):
        parse_search(encode({"type": "success", "message": "RESULT", "data": {}}), "x")


def test_a_search_error_envelope_is_retryable_not_not_found() -> None:
    # search answers an unknown name with an empty list; its error means a refused search
    assert parse_search(encode({"type": "success", "message": "RESULT", "data": []}), "x") == ()
    refused = encode({"type": "error", "message": "Invalid post-check-sum", "data": None})
    with pytest.raises(BattlelogParseError, match="search refused") as caught:
        parse_search(refused, "x")
    assert caught.value.error_class is ErrorClass.UNRECOGNIZED


# --- envelope --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "error_class"),
    [
        # no public capture records Battlelog's wording for an unknown persona: no wording parks
        (b'{"type":"error","message":"Could not find persona","data":null}',
         ErrorClass.UNRECOGNIZED),
        (b'{"type":"error","message":"Invalid personaId","data":null}', ErrorClass.UNRECOGNIZED),
        (b'{"type":"error","message":"Internal error, please try again later","data":null}',
         ErrorClass.SERVER),
        (b'{"type":"error","message":"Temporarily down for MAINTENANCE"}', ErrorClass.SERVER),
        (b'{"type":"error","message":"Too many requests","data":{}}', ErrorClass.THROTTLE),
        (b"<!DOCTYPE html><html><div id='errorpage'>x</div></html>", ErrorClass.SERVER),
        (b"  \n<html><body>Oops</body></html>", ErrorClass.UNRECOGNIZED),
        (b"", ErrorClass.MALFORMED),
        (b"not json", ErrorClass.MALFORMED),
        (b'{"type":"success","message":"OK","data":{"generalStats":{}', ErrorClass.MALFORMED),
        (b'[{"type":"success"}]', ErrorClass.MALFORMED),
        (b'{"type":"weird","message":"OK","data":{}}', ErrorClass.UNRECOGNIZED),
        (b'{"type":"success","message":"OK"}', ErrorClass.UNRECOGNIZED),
        (b"null", ErrorClass.MALFORMED),  # a soft throttle
        (b'{"type":"success","message":"OK","data":[]}', ErrorClass.MALFORMED),
        (b"\xff\xfe\x00{", ErrorClass.MALFORMED),
    ],
)
def test_envelope_classes(body: bytes, error_class: ErrorClass) -> None:
    with pytest.raises(BattlelogParseError) as caught:
        parse_detailed(body)
    assert caught.value.error_class is error_class
    assert len(str(caught.value)) <= 200


# --- coercion --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4836", 4836),
        (" 4836 ", 4836),
        (4836, 4836),
        (0.0, 0),
        ("12.0", 12),
        (11.999999, 12),
        ("-1", -1),
        (None, None),
        (True, None),
        (False, None),
        ("", None),
        ("abc", None),
        ("1_000", None),
        ("nan", None),
        (float("inf"), None),
        ([], None),
        ({}, None),
        (2**63, None),
        ("9" * 5000, None),
    ],
)
def test_to_int(value: Any, expected: int | None) -> None:
    assert to_int(value) == expected


def test_to_float_to_id_to_text() -> None:
    assert to_float("11.44") == 11.44 and to_float(3) == 3.0 and to_float(True) is None
    assert to_float("inf") is None and to_float(None) is None
    assert to_id("1008642814155") == 1008642814155 and to_id(1003662931478) == 1003662931478
    assert to_id(1.5e12) is None and to_id("-5") is None and to_id(0) is None
    assert to_id("１２") is None and to_id(True) is None
    assert to_text(" N20 ") == "N20" and to_text("") is None and to_text(5) is None


# --- endpoints -------------------------------------------------------------------------------


def test_endpoint_paths() -> None:
    assert (
        stats_path(Resource.DETAILED, 1003662931478, 1)
        == "/bf4/warsawdetailedstatspopulate/1003662931478/1/"
    )
    assert stats_path(Resource.PROFILE, 5, 32) == "/bf4/warsawoverviewpopulate/5/32/"
    assert stats_path(Resource.WEAPONS, 5, 64) == "/bf4/warsawWeaponsPopulateStats/5/64/stats/"
    assert stats_path(Resource.VEHICLES, 5, 2) == "/bf4/warsawvehiclesPopulateStats/5/2/stats/"
    assert account_soldiers_path(2832658801548551060) == (
        "/bf4/user/overviewBoxStats/2832658801548551060/"
    )
    assert search_form(" NINETWOZERO ") == {"query": "NINETWOZERO"}
    assert search_form("N20", "0123456789") == {"query": "N20", "post-check-sum": "0123456789"}
    assert check_sum_of("0123456789abcdef") == "0123456789" and check_sum_of("short") is None
    with pytest.raises(ValueError):
        stats_path(Resource.DETAILED, 0, 1)
    with pytest.raises(ValueError):
        stats_path(Resource.DETAILED, 2**63, 1)
    with pytest.raises(ValueError):
        stats_path(Resource.DETAILED, 5, 3)
    with pytest.raises(ValueError):
        search_form("   ")


# --- `bf4ps battlelog parse` -----------------------------------------------------------------


def run_cli(*args: str) -> Any:
    from click.testing import CliRunner

    from bf4ps.cli.battlelog import group

    return CliRunner().invoke(group, list(args))


def test_cli_parse_summaries() -> None:
    detailed = run_cli("parse", "--resource", "detailed", str(FIXTURES / BOND))
    assert detailed.exit_code == 0
    assert "kills 14346  deaths 10103" in detailed.output and "rank 123" in detailed.output
    weapons = run_cli("parse", "--resource", "weapons", str(FIXTURES / WEAPONS))
    assert weapons.exit_code == 0 and "136 item(s); top 10 by kills:" in weapons.output
    lines = weapons.output.splitlines()
    assert lines[1].startswith("u-100-mk5") and " 268 " in lines[1] and len(lines) == 11
    account = run_cli("parse", "--resource", "account", str(FIXTURES / LISTING))
    assert "177958806  NINETWOZERO  xbox360" in account.output


def test_cli_parse_json() -> None:
    result = run_cli("parse", "--resource", "vehicles", "--json", str(FIXTURES / VEHICLES))
    assert result.exit_code == 0
    items = json.loads(result.output)
    assert len(items) == 53 and items[0]["slug"] == "btr-90" and items[0]["time_in_seconds"] == 3118
    profile = run_cli("parse", "--resource", "profile", "--json", str(FIXTURES / OVERVIEW))
    assert json.loads(profile.output)["top_weapons"][0]["kills"] == 129


def test_cli_parse_malformed_exits_2_with_class_on_stderr(tmp_path: Path) -> None:
    result = run_cli("parse", "--resource", "weapons", str(FIXTURES / DETAILS_2013))
    assert result.exit_code == 2
    assert "unrecognized: statsTemplate profile.warsawdetailedstatspopulate" in result.stderr
    page = tmp_path / "page.html"
    page.write_text("<html><div id='errorpage'></div></html>")
    result = run_cli("parse", "--resource", "detailed", str(page))
    assert result.exit_code == 2 and result.stderr.startswith("server:")
    other = run_cli("parse", "--resource", "detailed", "--persona", "5", str(FIXTURES / BOND))
    assert other.exit_code == 2 and "personaId" in other.stderr
