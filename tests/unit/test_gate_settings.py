"""One gate-settings type for collectors, recon and the estimate, its defaults the settings'."""

from __future__ import annotations

from bf4ps.capacity import eta
from bf4ps.settings import GateSettings, Settings


def test_the_defaults_are_the_settings_defaults() -> None:
    assert GateSettings() == GateSettings.from_settings(Settings(database_url=None))
    assert not hasattr(eta, "GateDefaults")  # the estimate takes GateSettings itself


def test_each_field_comes_from_its_own_setting() -> None:
    s = Settings(egress_min_interval_seconds=7.0, egress_safety_margin_seconds=0.3,
                 claim_horizon_seconds=2.0, battlelog_connect_lead_seconds=1.5,
                 idle_poll_seconds=4.0, lease_seconds=300.0, egress_window_requests=9,
                 egress_window_seconds=45.0)
    assert GateSettings.from_settings(s) == GateSettings(
        interval=7.0, margin=0.3, horizon=2.0, connect_lead=1.5, idle_poll=4.0,
        lease_seconds=300.0, window_requests=9, window_seconds=45.0)
    assert GateSettings.from_settings(s).ahead == 2.0


def test_a_window_length_counts_only_with_its_window() -> None:
    gate = GateSettings.from_settings(Settings(egress_window_seconds=45.0))
    assert (gate.window_requests, gate.window_seconds) == (None, None)
