"""The simulator's knobs for answers that are well formed and wrong (zeros, counters gone down)
and for Battlelog not being itself (a 302 to EA's login page, a 503 with Retry-After): switched
at run time through /__sim/config, over real HTTP, classified by the real client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bf4ps.battlelog.classify import is_outage
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.domain import ErrorClass, Platform, Resource
from bf4ps.sim.battlelog.career import is_active, is_unknown
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.lookup import persona_id_for
from bf4ps.sim.battlelog.server import RunningSimulator, start_in_thread
from bf4ps.stats import plausible

BASELINE: dict[str, Any] = {"min_interval": 0.0, "speed": 1000.0, "fault_zeros": 0.0,
                            "fault_decrease": 0.0, "fault_login_redirect": 0.0,
                            "fault_retry_after": 0.0, "retry_after_seconds": 30}
PERSONA = next(p for p in (persona_id_for(f"distort-{n}", Platform.PC) for n in range(10_000))
               if not is_unknown(p) and not is_active(p, 0.3))


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSimulator]:
    with start_in_thread(SimConfig(port=0, seed=3, **BASELINE)) as running:
        yield running


@pytest.fixture(autouse=True)
def clean(sim: RunningSimulator) -> None:
    httpx.post(sim.url("/__sim/config"), json=BASELINE).raise_for_status()
    httpx.post(sim.url("/__sim/reset")).raise_for_status()


def configure(sim: RunningSimulator, **knobs: Any) -> None:
    httpx.post(sim.url("/__sim/config"), json=knobs).raise_for_status()


@pytest.mark.parametrize("resource", list(Resource))
async def test_zeros_and_decrease_are_well_formed_and_lower(sim: RunningSimulator,
                                                            resource: Resource) -> None:
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        normal = await battlelog.fetch(resource, PERSONA, Platform.PC)
        configure(sim, fault_zeros=1.0)
        zeros = await battlelog.fetch(resource, PERSONA, Platform.PC)
        configure(sim, fault_zeros=0.0, fault_decrease=1.0)
        lower = await battlelog.fetch(resource, PERSONA, Platform.PC)
    assert normal.ok and zeros.ok and lower.ok  # well formed: the parsers take them
    assert normal.parsed is not None and zeros.parsed is not None and lower.parsed is not None
    stored = plausible.counters_of(resource, normal.parsed)
    assert any(stored.values())
    assert plausible.all_zero(plausible.counters_of(resource, zeros.parsed))
    assert plausible.lowered(plausible.counters_of(resource, lower.parsed), stored)
    stats = httpx.get(sim.url("/__sim/stats")).json()
    assert stats["by_outcome"]["zeros"] == 1 and stats["by_outcome"]["decrease"] == 1


async def test_a_302_to_the_login_page_is_an_outage_not_a_soldiers_fault(
        sim: RunningSimulator) -> None:
    configure(sim, fault_login_redirect=1.0)
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        moved = await battlelog.fetch(Resource.DETAILED, PERSONA, Platform.PC)
    assert moved.http_status == 302 and moved.error_class is ErrorClass.SERVER
    assert moved.details["signal"] == "login_redirect"
    assert moved.details["location"].startswith("https://accounts.ea.com/")
    assert is_outage(moved) and not ErrorClass.SERVER.parks


async def test_a_503_with_retry_after_is_counted_per_ip_when_ignored(
        sim: RunningSimulator) -> None:
    configure(sim, fault_retry_after=1.0, retry_after_seconds=7)
    async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
        first = await battlelog.fetch(Resource.WEAPONS, PERSONA, Platform.PC)
        asked = time.time()
        again = await battlelog.fetch(Resource.WEAPONS, PERSONA, Platform.PC)  # too early
    assert first.http_status == 503 and first.details["retry_after_seconds"] == 7.0
    assert first.details["signal"] == "http_5xx" and is_outage(first)
    assert again.http_status == 503
    ip = httpx.get(sim.url("/__sim/stats")).json()["by_ip"]["127.0.0.1"]
    assert ip["by_outcome"]["retry_after"] == 2 and ip["retry_after_ignored"] == 1
    assert ip["retry_after_until"] >= asked + 6


def test_the_knobs_are_validated(sim: RunningSimulator) -> None:
    bad = httpx.post(sim.url("/__sim/config"), json={"fault_zeros": 1.5})
    assert bad.status_code == 400 and "fault_zeros" in bad.json()["error"]
    bad = httpx.post(sim.url("/__sim/config"), json={"retry_after_seconds": -1})
    assert bad.status_code == 400
    config = httpx.get(sim.url("/__sim/config")).json()
    assert config["fault_zeros"] == 0.0 and config["retry_after_seconds"] == 30
