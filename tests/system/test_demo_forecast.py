"""`bf4ps forecast` on a running demo's database: from measured figures (request costs, the
population and its activity, the egresses serving, the bootstrap's progress from the fleet
history), and clear as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests import load
from tests.procs import bf4ps_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    bool(os.environ.get("BF4PS_TEST_DATABASE_URL")), reason="the demo runs its own server")]


def forecast(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "forecast", *args],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def measured_enough(data: dict[str, Any]) -> bool:
    costs = data["inputs"]["costs"]["detailed"]
    rate = data["inputs"]["fleet_rate"]
    return bool(costs["requests_per_attempt"]["measured"] and rate and rate["measured"])


def test_forecast_on_the_demos_database_is_from_measured_figures(tmp_path: Path) -> None:
    data_dir = tmp_path / "bf4ps-data"
    env = bf4ps_env(BF4PS_DATA_DIR=str(data_dir))
    demo = subprocess.Popen(
        [sys.executable, "-m", "bf4ps.cli.main", "demo", "--duration", "150", "--port", "0",
         "--soldiers", "1500", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert demo.stderr is not None
        for line in demo.stderr:  # the demo names its database for other commands
            if "BF4PS_DATABASE_URL='" in line:
                break
        url = line.split("BF4PS_DATABASE_URL='", 1)[1].split("'", 1)[0]
        ps_env = env | {"BF4PS_DATABASE_URL": url}
        deadline = load.deadline(120)
        data: dict[str, Any] = {}
        while time.monotonic() < deadline:
            data = json.loads(forecast(ps_env, "--json", "--window", "600"))
            if measured_enough(data):
                break
            time.sleep(3)
        assert measured_enough(data), data
        text = forecast(ps_env, "--window", "600")
    finally:
        demo.terminate()
        demo.communicate(timeout=300)
    inputs = data["inputs"]
    assert not any(m.startswith(("population", "egresses")) for m in data["missing"]), data
    assert inputs["population"]["total"]["measured"] and inputs["population"]["total"][
        "value"] >= 1500
    assert inputs["egress_source"].startswith("measured")
    assert inputs["fleet_rate"]["measured"] and inputs["fleet_rate"]["value"] > 0
    assert data["demand_per_hour"] > 0 and data["capacity"]["per_hour"] > 0
    detailed = next(b for b in data["bootstrap"] if b["resource"] == "detailed")
    assert detailed["completes_at"] and detailed["collections_per_hour"] > 0
    assert "measured: ledger and event log, last 10 min" in text
    assert "binds:" in text and "bootstrap completion" in text
    assert "steady-state demand (requests/h):" in text and (": fits" in text
                                                             or "does NOT fit" in text)
