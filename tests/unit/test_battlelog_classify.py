"""Classification of (status, headers, body) and of transport failures, without a network."""

from __future__ import annotations

import httpx
import pytest

from bf4ps.battlelog.classify import (
    BodyTooLarge,
    classify_exception,
    classify_response,
    resource_parser,
    status_failure,
)
from bf4ps.battlelog.models import DetailedStats, FetchResult, WeaponItem
from bf4ps.domain import ErrorClass, Resource
from tests import captures

captures.skip_module_without()
DETAILS = captures.read("2013-bf4intel/details-stats.json")
WEAPONS = captures.read("2013-bf4intel/weapon-stats.json")
SECRET = "SECRET-PAYLOAD-MARKER"


def classify(
    status: int,
    body: bytes,
    resource: Resource = Resource.DETAILED,
    headers: dict[str, str] | None = None,
) -> FetchResult:
    return classify_response(
        status=status,
        headers=headers or {},
        body=body,
        parser=resource_parser(resource, 200661244, 1),
        resource=resource,
        duration_seconds=0.25,
    )


def test_success_carries_parsed_size_and_duration() -> None:
    result = classify(200, DETAILS)
    assert result.ok and result.error_class is None and result.message == ""
    assert isinstance(result.parsed, DetailedStats) and result.parsed.kills == 4836
    assert (result.http_status, result.size_bytes, result.duration_seconds) == (200, 5461, 0.25)
    assert result.resource is Resource.DETAILED


def test_weapons_success_records_skipped_items() -> None:
    result = classify(200, WEAPONS, Resource.WEAPONS)
    assert isinstance(result.parsed, tuple) and len(result.parsed) == 136
    assert isinstance(result.parsed[0], WeaponItem)
    assert result.details["skipped_items"] == 0


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (403, ErrorClass.THROTTLE),
        (429, ErrorClass.THROTTLE),
        (404, ErrorClass.NOT_FOUND),
        (410, ErrorClass.NOT_FOUND),
        (400, ErrorClass.SERVER),
        (401, ErrorClass.SERVER),
        (405, ErrorClass.SERVER),
        (301, ErrorClass.SERVER),
        (302, ErrorClass.SERVER),
        (500, ErrorClass.SERVER),
        (502, ErrorClass.SERVER),
        (503, ErrorClass.SERVER),
        (504, ErrorClass.SERVER),
    ],
)
def test_status_classes_win_over_any_body(status: int, error_class: ErrorClass) -> None:
    # Even a perfectly good payload is not used when the status says otherwise.
    result = classify(status, DETAILS)
    assert result.error_class is error_class and result.parsed is None
    assert result.http_status == status and str(status) in result.message


def test_status_failure_for_2xx_is_none() -> None:
    assert status_failure(200) is None and status_failure(204) is None


def test_throttle_keeps_retry_after_and_redirect_keeps_location() -> None:
    result = classify(429, b"slow down", headers={"retry-after": "120"})
    assert result.details["retry_after"] == "120"
    moved = classify(302, b"", headers={"location": "https://battlelog.battlefield.com/bf4/"})
    assert moved.details["location"].startswith("https://battlelog")


@pytest.mark.parametrize(
    ("body", "error_class"),
    [
        (b"<!DOCTYPE html><html><body class='errorpage'>" + SECRET.encode(), ErrorClass.SERVER),
        (b'{"type":"error","message":"NOTFOUND","data":null}', ErrorClass.UNRECOGNIZED),
        (b'{"type":"error","message":"GATE_REDIRECT","data":null}', ErrorClass.UNRECOGNIZED),
        (b"<html><body>Sign in to continue</body></html>", ErrorClass.UNRECOGNIZED),
        (b"<html><body>Sorry, that page doesn't exist.</body></html>", ErrorClass.NOT_FOUND),
        (b'{"type":"success","message":"OK"}', ErrorClass.UNRECOGNIZED),
        (b'{"type":"error","message":"TOOMANYSEARCHES","data":null}', ErrorClass.THROTTLE),
        (b'{"type":"success","message":"OK","data":{"personaId":200661244}}', ErrorClass.MALFORMED),
        (b'{"type":"success","message":"OK","data":{"generalStats":null}}', ErrorClass.MALFORMED),
        (SECRET.encode() + b" plain text", ErrorClass.MALFORMED),
        (DETAILS[: len(DETAILS) // 2], ErrorClass.MALFORMED),
        (b"", ErrorClass.MALFORMED),
    ],
)
def test_200_bodies(body: bytes, error_class: ErrorClass) -> None:
    result = classify(200, body)
    assert result.error_class is error_class and result.parsed is None
    assert SECRET not in result.message and len(result.message) <= 200
    assert result.size_bytes == len(body)


def test_message_quotes_battlelog_reason_short_and_clean() -> None:
    body = b'{"type":"error","message":"' + b"x\\n" * 500 + b'","data":null}'
    result = classify(200, body)
    assert result.error_class is ErrorClass.UNRECOGNIZED
    assert "\n" not in result.message and len(result.message) <= 200


def test_other_soldier_in_payload_is_unrecognized() -> None:
    result = classify_response(
        status=200,
        headers={},
        body=DETAILS,
        parser=resource_parser(Resource.DETAILED, 123, 1),
        resource=Resource.DETAILED,
        duration_seconds=0.0,
    )
    assert result.error_class is ErrorClass.UNRECOGNIZED and "personaId" in result.message
    assert result.details["signal"] == "other_soldier"  # never parks (ErrorClass.parks)


def test_parser_bug_is_internal_not_raised() -> None:
    def broken(body: bytes) -> DetailedStats:
        raise KeyError(SECRET)

    result = classify_response(
        status=200,
        headers={},
        body=DETAILS,
        parser=broken,
        resource=Resource.DETAILED,
        duration_seconds=0.0,
    )
    assert result.error_class is ErrorClass.INTERNAL and SECRET not in result.message


REQUEST = httpx.Request("GET", "http://battlelog.test/bf4/")


@pytest.mark.parametrize(
    ("exc", "error_class"),
    [
        (httpx.ReadTimeout("timed out", request=REQUEST), ErrorClass.TIMEOUT),
        (httpx.ConnectTimeout("timed out", request=REQUEST), ErrorClass.TIMEOUT),
        (httpx.PoolTimeout("timed out", request=REQUEST), ErrorClass.TIMEOUT),
        (TimeoutError(), ErrorClass.TIMEOUT),
        (httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST), ErrorClass.TIMEOUT),
        (httpx.ReadError("reset", request=REQUEST), ErrorClass.TIMEOUT),
        (httpx.RemoteProtocolError("closed", request=REQUEST), ErrorClass.TIMEOUT),
        (ConnectionResetError(104, "reset"), ErrorClass.TIMEOUT),
        (httpx.DecodingError("bad gzip", request=REQUEST), ErrorClass.MALFORMED),
        (BodyTooLarge("body larger than 10 bytes"), ErrorClass.MALFORMED),
        (RuntimeError("bug"), ErrorClass.INTERNAL),
    ],
)
def test_exception_classes(exc: BaseException, error_class: ErrorClass) -> None:
    result = classify_exception(exc, resource=Resource.WEAPONS, duration_seconds=1.5)
    assert result.error_class is error_class and not result.ok
    assert result.http_status is None and result.parsed is None
    assert (result.duration_seconds, result.size_bytes) == (1.5, 0)
    assert result.message and len(result.message) <= 200


def test_search_escapes_its_wildcards_and_the_simulator_reads_them_back() -> None:
    from bf4ps.battlelog.endpoints import escape_query, search_form
    from bf4ps.sim.battlelog.lookup import unescape

    assert search_form(" Under_Score ")["query"] == "Under\\_Score"
    assert escape_query("a\\b%c_") == "a\\\\b\\%c\\_"
    assert unescape(escape_query("we_ird%\\name_")) == ("we_ird%\\name_", [])
    assert unescape("a_b") == ("a_b", [1])


def test_recon_ladder_stages_signs_and_recommendation() -> None:
    from bf4ps.recon.ladder import Plan, PlanError, Sample, recommend, throttle_sign

    plan = Plan(start_interval=1.0, floor=0.5, step=0.8, stage_requests=2, safety=1.1)
    assert list(plan.stages()) == [1.0, 0.8, 0.64, 0.512, 0.5]
    assert recommend(0.64, plan) == 0.704

    def sample(error: str | None = None, soft: bool = False, latency: float = 0.1) -> Sample:
        return Sample("ladder", 0, 1.0, "detailed", 1, "pc", 0.0, 200, error, "m", 1, 1,
                      latency, soft)

    assert throttle_sign([sample(), sample()], 0.1, plan) is None
    assert "throttle" in str(throttle_sign([sample(), sample("throttle")], 0.1, plan))
    assert "soft" in str(throttle_sign([sample("malformed", soft=True), sample()], 0.1, plan))
    assert "latency" in str(throttle_sign([sample(latency=0.5), sample(latency=0.5)], 0.1, plan))
    with pytest.raises(PlanError):
        Plan(start_interval=1.0, floor=2.0)
