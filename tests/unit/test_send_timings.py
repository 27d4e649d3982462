"""One type of a process's own send timings for collectors, recon and the estimate, its
defaults the settings'; and the seed of a new egress's gate, from the same settings."""

from __future__ import annotations

from bf4ps.capacity import eta
from bf4ps.fleet.seed import GateSeed
from bf4ps.settings import SendTimings, Settings


def test_the_defaults_are_the_settings_defaults() -> None:
    assert SendTimings() == SendTimings.from_settings(Settings(database_url=None))
    assert not hasattr(eta, "GateDefaults")  # the estimate takes SendTimings itself


def test_each_field_comes_from_its_own_setting() -> None:
    s = Settings(egress_min_interval_seconds=7.0, egress_safety_margin_seconds=0.3,
                 claim_horizon_seconds=2.0, battlelog_connect_lead_seconds=1.5,
                 idle_poll_seconds=4.0, lease_seconds=300.0, egress_window_requests=9,
                 egress_window_seconds=45.0)
    assert SendTimings.from_settings(s) == SendTimings(
        margin=0.3, horizon=2.0, connect_lead=1.5, idle_poll=4.0, lease_seconds=300.0,
        seed_interval=7.0)
    assert SendTimings.from_settings(s).ahead == 2.0
    assert GateSeed.of(s) == GateSeed(min_interval=7.0, window_requests=9, window_seconds=45.0)


def test_a_window_length_counts_only_with_its_window() -> None:
    seed = GateSeed.of(Settings(egress_window_seconds=45.0))
    assert (seed.window_requests, seed.window_seconds) == (None, None)
