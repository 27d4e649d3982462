"""Lease, heartbeat and reaper timings are checked against each other when the settings are
built: a combination that cannot work is refused at start, naming the values."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from bf4ps.settings import Settings
from tests.procs import bf4ps_env


@pytest.mark.parametrize(("values", "says"), [
    ({"lease_seconds": 20, "heartbeat_seconds": 15},
     "BF4PS_HEARTBEAT_SECONDS (15) must be at most half of BF4PS_LEASE_SECONDS (20)"),
    ({"heartbeat_seconds": 15, "heartbeat_lost_after_seconds": 10},
     "BF4PS_HEARTBEAT_LOST_AFTER_SECONDS (10) must exceed BF4PS_HEARTBEAT_SECONDS (15)"),
    ({"lease_seconds": 30, "heartbeat_seconds": 5, "scheduler_tick_seconds": 30},
     "BF4PS_SCHEDULER_TICK_SECONDS (30, the lease reaper's period) must be below "
     "BF4PS_LEASE_SECONDS (30)"),
    ({"lease_seconds": 4, "heartbeat_seconds": 1, "heartbeat_lost_after_seconds": 3,
      "scheduler_tick_seconds": 1, "claim_horizon_seconds": 5},
     "claimed up to 5 s before its slot"),
])
def test_timings_that_cannot_work_are_refused_with_the_values(
        values: dict[str, float], says: str) -> None:
    with pytest.raises(ValidationError, match="timings do not fit together") as err:
        Settings(**values)  # type: ignore[arg-type]
    assert says in str(err.value)


def test_the_defaults_and_tight_test_timings_fit() -> None:
    Settings()
    Settings(lease_seconds=4, heartbeat_seconds=1, heartbeat_lost_after_seconds=3,
             scheduler_tick_seconds=0.5, claim_horizon_seconds=0.5,
             battlelog_connect_lead_seconds=1.0)


def test_the_command_line_names_the_values_in_one_message() -> None:
    out = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "status"],
                         env=bf4ps_env(BF4PS_LEASE_SECONDS="10", BF4PS_HEARTBEAT_SECONDS="15"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "BF4PS_HEARTBEAT_SECONDS (15) must be at most half of BF4PS_LEASE_SECONDS (10)" \
        in out.stderr
    assert "Traceback" not in out.stderr and "(got" not in out.stderr
