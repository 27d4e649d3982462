"""The settings object (env + TOML) and the run-time policy's validation and arithmetic."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bf4ps.domain import ErrorClass, Lane
from bf4ps.policy import Policy, PolicyError, parse_value, validated
from bf4ps.queue.backoff import is_terminal, retry_delay
from bf4ps.scheduler.mix import class_quota, joined, resource_quota
from bf4ps.settings import Settings


def test_env_wins_over_the_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "bf4ps.toml"
    toml.write_text('lease_seconds = 77\nweb_port = 9001\nbattlelog_base_url = "http://x"\n')
    monkeypatch.setenv("BF4PS_CONFIG_FILE", str(toml))
    monkeypatch.setenv("BF4PS_WEB_PORT", "9002")
    s = Settings()
    assert (s.lease_seconds, s.web_port, s.battlelog_base_url) == (77, 9002, "http://x")


def test_invalid_settings_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BF4PS_LEASE_SECONDS", "-1")
    with pytest.raises(ValueError, match="lease_seconds"):
        Settings()


def test_policy_values_are_validated() -> None:
    with pytest.raises(PolicyError, match="unknown policy key"):
        parse_value("no_such_key", "1")
    with pytest.raises(PolicyError):
        validated({"share_active": 2})
    assert parse_value("backoff_seconds", "[1, 2]") == [1, 2]


def test_backoff_is_capped_exponential_with_jitter() -> None:
    pol = Policy(backoff_jitter=0.1)
    rng = random.Random(1)
    delays = [retry_delay(n, ErrorClass.SERVER, Lane.BACKGROUND, pol, rng) for n in (1, 2, 3, 4, 9)]
    for got, base in zip(delays, (900, 3600, 21600, 86400, 86400), strict=True):
        assert base * 0.9 <= got <= base * 1.1
    assert retry_delay(1, ErrorClass.SERVER, Lane.INTERACTIVE, Policy(backoff_jitter=0)) == 20
    assert retry_delay(5, ErrorClass.THROTTLE, Lane.BACKGROUND, Policy(backoff_jitter=0)) == 60
    assert is_terminal(1, ErrorClass.NOT_FOUND, pol)
    assert not is_terminal(50, ErrorClass.THROTTLE, pol)
    assert is_terminal(10, ErrorClass.MALFORMED, pol)
    assert not is_terminal(9, ErrorClass.MALFORMED, pol)


def test_class_quota_splits_by_largest_remainder() -> None:
    assert class_quota(100, Policy()) == {"active": 60, "recent": 20, "bootstrap": 15, "retry": 5}
    assert sum(class_quota(7, Policy()).values()) == 7


def test_progressive_mix_follows_the_watermarks() -> None:
    cov = {"detailed": {"never_attempted": 90, "current": 10}}
    assert set(joined(Policy(), cov)) == {"detailed", "profile"}
    cov = {"detailed": {"never_attempted": 50, "current": 40, "unavailable": 10}}
    assert set(joined(Policy(), cov)) == {"detailed", "profile", "weapons", "vehicles"}
    assert resource_quota("active", 8, Policy(), cov) == dict.fromkeys(
        ("detailed", "profile", "weapons", "vehicles"), 2)


def test_a_small_top_up_goes_to_the_resources_with_the_fewest_jobs_queued() -> None:
    """A feeder topping up two jobs a tick: without the tie rule detailed and profile got every
    unit and a one-minute demo collected no weapons or vehicles."""
    queue = {"detailed": 0, "profile": 0, "weapons": 0, "vehicles": 0}
    for _ in range(20):  # twenty ticks, each feeding two jobs (none collected meanwhile)
        for resource, n in resource_quota("active", 2, Policy(), {}, queue).items():
            queue[resource] += n
    assert queue == dict.fromkeys(queue, 10)
    assert resource_quota("active", 1, Policy(), {}, {"detailed": 3, "profile": 1,
                                                       "weapons": 0, "vehicles": 2}) == {
        "detailed": 0, "profile": 0, "weapons": 1, "vehicles": 0}


def test_the_battlelog_session_file_is_read_checked_and_never_shown(tmp_path: Path) -> None:
    secret = tmp_path / "session"
    assert Settings(battlelog_session_file=None).battlelog_session() is None
    missing = Settings(battlelog_session_file=secret)
    with pytest.raises(ValueError, match="cannot be read"):
        missing.battlelog_session()
    secret.write_text("tooshort\n")
    with pytest.raises(ValueError, match="not a Battlelog session id") as bad:
        Settings(battlelog_session_file=secret).battlelog_session()
    assert "tooshort" not in str(bad.value)
    secret.write_text("0123456789abcdefSECRET\n")
    good = Settings(battlelog_session_file=secret)
    assert good.battlelog_session() == "0123456789abcdefSECRET"
    assert "SECRET" not in repr(good) and "session" not in repr(good)


def test_unrecognized_answers_never_park() -> None:
    pol = Policy()
    assert not any(is_terminal(n, ErrorClass.UNRECOGNIZED, pol) for n in range(1, 1000))
    assert is_terminal(pol.max_consecutive_failures, ErrorClass.MALFORMED, pol)
    assert not ErrorClass.UNRECOGNIZED.parks and ErrorClass.UNRECOGNIZED.retryable
