"""Battlelog not being itself, as the classifier sees it: redirects by where they lead,
Retry-After in both forms, which answers are outages (they cool the egress and never count
toward parking) and which classes may park."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from bf4ps.battlelog.classify import (
    classify_response,
    is_outage,
    is_soft_throttle,
    redirect_signal,
    resource_parser,
    retry_after_seconds,
    slows_egress,
)
from bf4ps.battlelog.models import FetchResult
from bf4ps.collector.outage import cool_seconds, cool_signal
from bf4ps.domain import ErrorClass, Resource
from bf4ps.gates.throttle import hard_signal
from bf4ps.policy import Policy
from bf4ps.queue.backoff import is_terminal


@pytest.mark.parametrize(("location", "signal"), [
    ("https://accounts.ea.com/connect/auth?client_id=battlelog", "login_redirect"),
    ("/bf4/gate/?returnUrl=x", "login_redirect"),
    ("https://battlelog.battlefield.com/bf4/maintenance/", "maintenance_redirect"),
    ("https://battlelog.battlefield.com/bf4/news/", "redirect"),
    (None, "redirect"),
])
def test_a_redirect_is_named_by_where_it_leads(location: str | None, signal: str) -> None:
    assert redirect_signal(location) == signal


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=90), usegmt=True),
                               now) == 90.0
    assert retry_after_seconds(format_datetime(now - timedelta(seconds=90), usegmt=True),
                               now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds("-5") is None


def answer(status: int, headers: dict[str, str], body: bytes = b"<html></html>") -> FetchResult:
    return classify_response(status=status, headers=httpx.Headers(headers), body=body,
                             parser=resource_parser(Resource.DETAILED),
                             resource=Resource.DETAILED, duration_seconds=0.1)


def test_login_redirects_and_503s_are_outages_that_never_park() -> None:
    moved = answer(302, {"location": "https://accounts.ea.com/connect/auth"})
    busy = answer(503, {"retry-after": "30"})
    throttled = answer(429, {"retry-after": "12"})
    gone = answer(404, {})
    assert (moved.error_class, moved.details["signal"]) == (ErrorClass.SERVER, "login_redirect")
    assert busy.details["retry_after_seconds"] == 30.0 and busy.details["signal"] == "http_5xx"
    assert throttled.details["retry_after_seconds"] == 12.0  # honoured too (collector/outage.py)
    assert is_outage(moved) and is_outage(busy)
    assert not is_outage(throttled) and not is_outage(gone)
    policy = Policy(max_consecutive_failures=3)
    for outage in (ErrorClass.SERVER, ErrorClass.TIMEOUT, ErrorClass.UNRECOGNIZED,
                   ErrorClass.IMPLAUSIBLE, ErrorClass.THROTTLE, ErrorClass.INTERNAL):
        assert not outage.parks and not any(is_terminal(n, outage, policy) for n in range(50))
    assert ErrorClass.NOT_FOUND.parks and is_terminal(1, ErrorClass.NOT_FOUND, policy)
    assert ErrorClass.MALFORMED.parks and is_terminal(3, ErrorClass.MALFORMED, policy)


def test_only_a_hard_throttle_alone_slows_the_egress() -> None:
    missing = answer(200, {}, b'{"type":"success","message":"OK","data":{}}')
    assert is_soft_throttle(missing) and missing.error_class is ErrorClass.MALFORMED
    assert not slows_egress(missing)  # a run of them does (gates/throttle.py soft_answer)
    assert slows_egress(answer(403, {})) and slows_egress(answer(429, {}))
    assert [hard_signal(s) for s in (403, 429, 200, None)] == [
        "http_403", "http_429", "throttle_message", "throttle_message"]


def test_an_outage_cool_down_is_jittered_and_names_its_signal() -> None:
    policy = Policy(outage_cooldown_seconds=5, outage_cooldown_jitter=1.0,
                    retry_after_max_seconds=60)
    rng = random.Random(7)
    busy, moved = answer(503, {}), answer(302, {"location": "https://accounts.ea.com/x"})
    plain = [cool_seconds(busy, policy, rng) for _ in range(200)]
    # 5 s ± 2.5 s from the send, spread out (the answer took 0.1 s of it)
    assert 2.4 <= min(plain) < 2.9 and 6.9 < max(plain) <= 7.4
    assert 4.4 < sum(plain) / len(plain) < 5.4  # the mean is the configured cool-down
    asked = [cool_seconds(answer(503, {"retry-after": "30"}), policy, rng) for _ in range(50)]
    assert min(asked) >= 30 and max(asked) <= 35  # never shorter than asked
    assert 60 <= cool_seconds(answer(503, {"retry-after": "9000"}), policy, rng) <= 65
    assert cool_seconds(busy, Policy(outage_cooldown_seconds=0), rng) == 0.0
    timeout = FetchResult(Resource.DETAILED, None, 10.0, 0, error_class=ErrorClass.TIMEOUT)
    assert cool_seconds(timeout, policy, rng) == 0.0  # its 10 s of waiting rested the egress
    assert [cool_signal(r) for r in (busy, moved, answer(503, {"retry-after": "3"}),
                                     timeout)] == [
        "http_5xx", "login_redirect", "retry_after", "timeout"]
