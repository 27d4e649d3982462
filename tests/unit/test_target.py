"""A submission's target is parsed once, into a name or a persona id on a platform; hostile or
malformed fields are refused with an InputError naming the field."""

from __future__ import annotations

import pytest

from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError
from bf4ps.interactive.target import ByName, ByPersona, parse_target

URL = "https://battlelog.battlefield.com/bf4/soldier/Url_Guy/stats/1003662931478/xbox/"


def test_a_name_on_a_platform() -> None:
    assert parse_target(name="  Some Gamertag ", platform="xboxone") == ByName(
        Platform.XBOXONE, "Some Gamertag")


def test_a_persona_id_with_or_without_a_name() -> None:
    assert parse_target(persona_id="42", platform="pc") == ByPersona(Platform.PC, 42, None)
    assert parse_target(persona_id=42, name="Typed", platform=Platform.PS4) == ByPersona(
        Platform.PS4, 42, "Typed")


def test_a_battlelog_url_in_its_field_or_the_name_box_wins_over_the_platform() -> None:
    want = ByPersona(Platform.XBOX360, 1003662931478, "Url_Guy")
    assert parse_target(url=URL) == want
    assert parse_target(name=URL, platform="pc") == want
    assert parse_target(name="battlelog.battlefield.com/bf4/soldier/SOLDIER/stats/7/pc/") \
        == ByPersona(Platform.PC, 7, "SOLDIER")
    # a URL whose name segment is no soldier name still names its persona
    assert parse_target(url="https://battlelog.battlefield.com/bf4/soldier/%FF%FE/stats/7/pc/") \
        == ByPersona(Platform.PC, 7, None)


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({}, "platform", "platform is required"),
    ({"name": "NoPlatform"}, "platform", "platform is required"),
    ({"platform": "pc"}, "name", "a soldier name or persona id is required"),
    ({"platform": "nintendo", "name": "ok"}, "platform", "unknown platform"),
    ({"platform": ["pc"], "name": "ok"}, "platform", "platform must be text"),
    ({"platform": "pc", "name": 5}, "name", "must be text"),
    ({"platform": "pc", "name": "   "}, "name", "soldier name is required"),
    ({"platform": "pc", "name": "a" * 33}, "name", "longer than 32"),
    ({"platform": "pc", "name": "Robert'); DROP TABLE soldiers;--"}, "name", "letters, digits"),
    ({"platform": "pc", "name": "two  spaces"}, "name", "single inner spaces"),
    ({"platform": "pc", "name": "nul\x00byte"}, "name", "letters, digits"),
    ({"platform": "pc", "name": "<script>"}, "name", "letters, digits"),
    ({"platform": "pc", "persona_id": True}, "persona_id", "positive integer"),
    ({"platform": "pc", "persona_id": -5}, "persona_id", "between 1 and"),
    ({"platform": "pc", "persona_id": "-5"}, "persona_id", "positive integer"),
    ({"platform": "pc", "persona_id": "1e3"}, "persona_id", "positive integer"),
    ({"platform": "pc", "persona_id": "\u0661\u0662"}, "persona_id", "positive integer"),
    ({"platform": "pc", "persona_id": 2**63}, "persona_id", "between 1 and"),
    ({"platform": "pc", "persona_id": 4.5}, "persona_id", "positive integer"),
    ({"url": 5}, "url", "url must be text"),
    ({"url": "javascript:alert(1)"}, "url", "only battlelog.battlefield.com"),
    ({"url": "https://evil.example/bf4/soldier/x/stats/1/pc/"}, "url",
     "only battlelog.battlefield.com"),
    ({"url": "https://user@battlelog.battlefield.com/bf4/soldier/x/stats/1/pc/"}, "url",
     "only battlelog.battlefield.com"),
    ({"url": "https://battlelog.battlefield.com:99999/bf4/soldier/x/stats/1/pc/"}, "url",
     "not a valid URL"),
    ({"url": "https://battlelog.battlefield.com/bf4/soldier/x/stats/1/wii/"}, "url",
     "unknown platform"),
    ({"url": "https://battlelog.battlefield.com/bf4/soldier/x/stats/0/pc/"}, "url",
     "between 1 and"),
    ({"url": "https://battlelog.battlefield.com/bf3/soldier/x/stats/1/pc/"}, "url",
     "expected a BF4 soldier URL"),
    ({"url": "https://battlelog.battlefield.com/" + "a" * 400}, "url", "longer than 300"),
    ({"name": "https://evil.example/bf4/soldier/x/stats/1/pc/", "platform": "pc"}, "url",
     "only battlelog.battlefield.com"),
])
def test_hostile_fields_are_refused_with_the_field_named(fields: dict[str, object], field: str,
                                                         words: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_target(**fields)
    assert exc.value.field == field and words in exc.value.message, exc.value.message
