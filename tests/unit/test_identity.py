"""Another game's or another endpoint's answer, another soldier's, or values out of BF4's ranges
are unrecognized, naming what they were (battlelog/identity.py), on the real captures."""

from __future__ import annotations

import orjson
import pytest

from bf4ps.battlelog.classify import apply_parser, is_outage, resource_parser, slows_egress
from bf4ps.battlelog.models import FetchResult
from bf4ps.domain import ErrorClass, Resource
from tests.guarded import CAPTURES, capture

BOND = (1486274664, 1)  # TheOnlyBond on PC: the same soldier in BF4, BF3 and Hardline
HARDLINE = "2020-battlelog-net-other-games/bfh-detailedstatspopulate-TheOnlyBond.json"
BF3 = "2020-battlelog-net-other-games/bf3-overviewPopulateStats-TheOnlyBond.json"


def classified(resource: Resource, body: bytes, ids: tuple[int, int] | None = None
               ) -> FetchResult:
    parser = resource_parser(resource, *(ids or (None, None)))
    return apply_parser(FetchResult(resource, 200, 0.0, len(body)), body, parser)


def unrecognized(result: FetchResult, signal: str) -> None:
    assert result.error_class is ErrorClass.UNRECOGNIZED and result.parsed is None
    assert result.details["signal"] == signal, result.details
    assert not slows_egress(result) and not is_outage(result)  # not a throttle, not an outage
    assert not ErrorClass.UNRECOGNIZED.parks


@pytest.mark.parametrize(("resource", "name", "signal"), [
    (Resource.DETAILED, HARDLINE, "other_game:hardline"),
    (Resource.PROFILE, BF3, "other_game:battlefield_three"),
    (Resource.DETAILED, BF3, "other_game:battlefield_three"),
])
def test_another_games_answer_is_unrecognized_naming_the_game(
        resource: Resource, name: str, signal: str) -> None:
    unrecognized(classified(resource, capture(name), BOND), signal)


@pytest.mark.parametrize("asked", list(CAPTURES))
@pytest.mark.parametrize("answered", list(CAPTURES))
def test_another_endpoints_answer_is_unrecognized_not_a_soft_throttle(
        asked: Resource, answered: Resource) -> None:
    result = classified(asked, capture(CAPTURES[answered]))
    if asked is answered:
        assert result.ok
    else:
        unrecognized(result, f"other_endpoint:{answered.value}")


def test_hardline_without_its_template_is_caught_by_its_rank() -> None:
    document = orjson.loads(capture(HARDLINE).removeprefix(b"\xef\xbb\xbf"))
    del document["data"]["statsTemplate"]
    assert document["data"]["generalStats"]["rank"] in (150, "150")
    unrecognized(classified(Resource.DETAILED, orjson.dumps(document), BOND),
                 "out_of_range:rank")


def test_another_soldiers_answer_is_unrecognized() -> None:
    body = capture("2020-battlelog-net/detailed-TheOnlyBond.json")
    assert classified(Resource.DETAILED, body, BOND).ok
    unrecognized(classified(Resource.DETAILED, body, (BOND[0] + 1, 1)), "other_soldier")
    unrecognized(classified(Resource.DETAILED, body, (BOND[0], 2)), "other_soldier")


def test_a_negative_counter_and_another_games_marker_are_unrecognized() -> None:
    document = orjson.loads(capture(CAPTURES[Resource.WEAPONS]))
    document["data"]["mainWeaponStats"][0]["kills"] = -3
    unrecognized(classified(Resource.WEAPONS, orjson.dumps(document)), "out_of_range:kills")
    document = orjson.loads(capture(CAPTURES[Resource.VEHICLES]))
    del document["data"]["statsTemplate"]
    assert classified(Resource.VEHICLES, orjson.dumps(document)).ok  # gameInt 2048: BF4
    document["data"]["gameInt"] = 2
    unrecognized(classified(Resource.VEHICLES, orjson.dumps(document)), "other_game:unknown")
