"""The simulator's answers have the real captures' shapes: the same keys at every level, JSON types
the captures have there, the same nesting (tests/captures.py `shape`; no value is compared). Its
shape files are the captures' shapes, so a new capture that changes a shape shows here."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from bf4ps.domain import Platform
from bf4ps.sim.battlelog import detailed, generator, items, lookup, overview, snapshot
from bf4ps.sim.personas import persona_id_for
from tests import captures

NAMES = ("TheOnlyBond", "xX_Sniper_Xx", "Zed42", "a")


def _soldiers(name: str, growth: float) -> bytes:
    registry = lookup.Registry()
    registry.remember_name(name)
    user_id = lookup.user_id_for_name(name)
    return lookup.soldiers_body(registry, user_id, lambda p: snapshot.take(p, growth))


def _persona(name: str) -> int:
    return persona_id_for(name, Platform.PC)


BODIES: dict[str, Callable[[str, float], bytes]] = {
    "detailed": lambda n, g: detailed.detailed_body(snapshot.take(_persona(n), g), 1),
    "profile": lambda n, g: overview.overview_body(
        snapshot.take(_persona(n), g), 1, lookup.user_id_for_name(n), g > 1.0),
    "weapons": lambda n, g: items.weapons_body(_persona(n), 1, g),
    "vehicles": lambda n, g: items.vehicles_body(_persona(n), 1, g),
    "soldiers": _soldiers,
}


def _answers(resource: str) -> list[Any]:
    bodies = [BODIES[resource](name, growth) for name in NAMES for growth in (1.0, 1.6)]
    answers = [orjson.loads(body) for body in bodies]
    assert all(a["type"] == "success" for a in answers)
    return [a["data"] for a in answers]


COUNTER = re.compile(r"^(\S+): (\[[^]]*\]) where the captures have (\[[^]]*\])$")
NUMBERS = {"int", "float", "str"}


def _zero(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _counter_quirk(difference: str, answers: list[Any]) -> bool:
    """Battlelog's counter quirk, not a shape change: a counter is a digit string ("4836") when
    it is not zero and the number 0 or 0.0 when it is, so where a captured soldier had none of
    something the capture shows a number and ours a string, or the other way round. Tolerated
    only where every one of our values of a kind the captures lack there is a zero or a digit
    string."""
    match = COUNTER.match(difference)
    if not match:
        return False
    ours, theirs = ({k.strip("'") for k in m.strip("[]").split(", ")} for m in match.group(2, 3))
    if not ours <= NUMBERS or not theirs - {"null"} <= NUMBERS:
        return False
    odd = [v for v in captures.values_at(answers, "[]" + match[1].rstrip("."))
           if captures.kind(v) not in theirs]
    return bool(odd) and all(_zero(v) or (isinstance(v, str) and v.isdigit()) for v in odd)


@pytest.mark.parametrize("resource", sorted(captures.SHAPE_SOURCES))
def test_the_simulators_answers_have_the_captures_shape(resource: str) -> None:
    answers = _answers(resource)
    ours = captures.shape_of_all(answers)
    differences = [d for d in captures.differences(ours, captures.capture_shape(resource))
                   if not _counter_quirk(d, answers)]
    assert differences == []


@pytest.mark.parametrize("resource", sorted(captures.SHAPE_SOURCES))
def test_the_simulators_shape_files_are_the_captures_shapes(resource: str) -> None:
    ours = captures.shape_from_json(generator.shape(resource))
    assert captures.shape_json(ours) == captures.shape_json(captures.capture_shape(resource))


def test_a_changed_shape_is_seen() -> None:
    """The comparison can fail: a renamed key, a number as a string, a lost level all show."""
    theirs = captures.shape({"a": 1, "b": {"c": [1.5]}})
    assert list(captures.differences(captures.shape({"a": 1, "b": {"c": [1.5]}}), theirs)) == []
    for changed in ({"a": 1, "x": {"c": [1.5]}}, {"a": "1", "b": {"c": [1.5]}},
                    {"a": 1, "b": {"c": []}}, {"a": 1, "b": None}):
        assert list(captures.differences(captures.shape(changed), theirs)) != [], changed
