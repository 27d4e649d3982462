"""The guarded lifetime counters are derived from the parsed models (stats/counters.py): every
field is either guarded or a named exception, and the guard compares them all."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from bf4ps.domain import Resource
from bf4ps.stats import counters, plausible

NUMERIC = ({int, type(None)}, {float, type(None)})


@pytest.mark.parametrize("resource", list(counters.MODELS))
def test_every_field_is_a_counter_or_a_named_exception(resource: Resource) -> None:
    model = counters.MODELS[resource]
    names = {f.name for f in dataclasses.fields(model)}
    guarded, skipped = set(counters.COUNTERS[resource]), set(counters.NOT_COUNTERS[resource])
    assert guarded | skipped == names and not guarded & skipped
    assert all(counters.NOT_COUNTERS[resource].values())  # each exception says why
    hints = typing.get_type_hints(model)
    for name in guarded:
        assert set(typing.get_args(hints[name])) in NUMERIC, name


def test_the_counters_the_issue_found_unguarded_are_guarded() -> None:
    detailed = counters.COUNTERS[Resource.DETAILED]
    for name in ("headshots", "shots_fired", "wins", "revives", "conquest_score", "rank"):
        assert name in detailed
    assert "rank" in counters.COUNTERS[Resource.PROFILE]
    for resource in (Resource.WEAPONS, Resource.VEHICLES):
        assert {"kills", "service_stars"} <= set(counters.COUNTERS[resource])
    assert {"headshots", "shots_fired"} <= set(counters.COUNTERS[Resource.WEAPONS])


def test_a_new_field_is_guarded_by_default() -> None:
    @dataclasses.dataclass
    class Grown:
        kills: int | None = None
        skill: int | None = None
        medals: int | None = None  # not named anywhere

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(counters.MODELS, Resource.DETAILED, Grown)
        assert counters.derived(Resource.DETAILED) == ("kills", "medals")


def test_a_stored_value_never_becomes_null_and_never_goes_down() -> None:
    stored: plausible.Counters = {"a": 0, "b": 5, "c": None, "d": 2.5}
    assert plausible.lowered({"a": None, "b": 5, "c": None, "d": 2.5}, stored) == ["a"]
    assert plausible.lowered({"a": 0, "b": 4, "c": 1, "d": 2.4}, stored) == ["b", "d"]
    assert plausible.lowered({"a": 1, "b": 6, "c": None, "d": 3.0}, stored) == []
