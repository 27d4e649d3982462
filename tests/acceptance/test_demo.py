"""`bf4ps demo --duration 60 --json` as a new user would run it: all four resources collected,
coverage rose, the simulator saw zero rate-limit violations, and nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.procs import bf4ps_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    bool(os.environ.get("BF4PS_TEST_DATABASE_URL")), reason="the demo runs its own server")]


def leftovers(marker: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            env = proc.info["environ"] or {}
        except (psutil.Error, OSError):
            continue
        if marker in cmd or env.get("BF4PS_DATA_DIR", "").startswith(marker):
            found.append(f"{proc.pid} {cmd[:120]}")
    return found


def test_demo_runs_collects_and_stops_cleanly(tmp_path: Path) -> None:
    data = tmp_path / "bf4ps-data"
    env = bf4ps_env(BF4PS_DATA_DIR=str(data))
    demo = subprocess.Popen(
        [sys.executable, "-m", "bf4ps.cli.main", "demo", "--duration", "60", "--json",
         "--port", "0", "--soldiers", "2000"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert demo.stderr is not None
    seen = []
    for line in demo.stderr:  # the demo names its database for other commands
        seen.append(line)
        if "BF4PS_DATABASE_URL='" in line:
            break
    url = line.split("BF4PS_DATABASE_URL='", 1)[1].split("'", 1)[0]
    status = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "status", "--json"],
                            env=env | {"BF4PS_DATABASE_URL": url}, capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert {"soldiers", "queue_depth", "coverage"} <= set(json.loads(status.stdout))
    out, err = demo.communicate(timeout=400)
    assert demo.returncode == 0, ("".join(seen) + err)[-3000:]
    summary = json.loads(out)
    collected = summary["coverage"]["collected_end"]
    assert all(collected[r] > 0 for r in ("detailed", "profile", "weapons", "vehicles")), collected
    assert sum(collected.values()) > sum(summary["coverage"]["collected_start"].values())
    assert summary["soldiers"] >= 2000
    assert summary["violations"] == {"per_ip": 0, "fleet": 0}
    assert summary["requests"]["total"] > 100
    assert leftovers(str(data)) == []
