"""Real collector processes (`bf4ps collector run`) against a real simulator and PostgreSQL."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import SimProcess, spawn
from tests import load
from tests.procs import as_remote, bf4ps_env

LIVE: list[Fleet] = []


def stop_every_fleet() -> None:
    while LIVE:
        LIVE.pop().stop_all(timeout=20)


IDLE: list[SimProcess] = []  # this worker's simulators between tests


@contextmanager
def simulator(**knobs: Any) -> Iterator[SimProcess]:
    """The Battlelog simulator in its own process (its clock is not stalled by the test's).
    A worker starts one and serves its tests from it: between tests it is made new through its
    own reset (`POST /__sim/reset` with these knobs: a fresh world, as a newly started one);
    one still running when another is asked for (two in one test) is not shared."""
    sim = None
    while IDLE and sim is None:
        candidate = IDLE.pop()
        if candidate.process.poll() is None and _made_new(candidate, knobs):
            sim = candidate
        else:
            candidate.stop()
    if sim is None:
        sim = spawn(SimConfig(port=0, **knobs))
        as_remote(sim.process.pid)
    try:
        yield sim
    finally:
        if sim.process.poll() is None:
            IDLE.append(sim)


def _made_new(sim: SimProcess, knobs: dict[str, Any]) -> bool:
    try:
        answer = httpx.post(sim.url("/__sim/reset"), json={"fresh": knobs},
                            timeout=load.scaled(10))
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


def stop_idle_simulators() -> None:
    while IDLE:
        IDLE.pop().stop()


def sim_stats(sim: SimProcess) -> dict[str, Any]:
    return dict(httpx.get(sim.url("/__sim/stats"), timeout=10).json())


@dataclass
class Fleet:
    db_url: str
    sim_url: str
    data_dir: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        LIVE.append(self)  # stopped after every test even when the test fails (conftest)

    def env(self) -> dict[str, str]:
        return bf4ps_env(**{
            "BF4PS_DATABASE_URL": self.db_url, "BF4PS_BATTLELOG_BASE_URL": self.sim_url,
            "BF4PS_DATA_DIR": str(self.data_dir), "PYTHONUNBUFFERED": "1",
        } | self.env_extra)

    def start(self, name: str, egress: str, source: str | None = None,
              lane: str = "background", *extra: str, env: dict[str, str] | None = None
              ) -> subprocess.Popen[str]:
        """`env`: this process's own additions (a skewed clock: tests/clocks.py)."""
        args = [sys.executable, "-m", "bf4ps.cli.main", "collector", "run", "--name", name,
                "--egress", egress, "--lane", lane, "--hostname", "test-host", *extra]
        if source:
            args += ["--source-address", source]
        log = open(self.data_dir / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(args, env=self.env() | (env or {}), stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.data_dir / f"{name}.log").read_text()

    def tails(self, lines: int = 15) -> str:
        """The last lines of every process's log and its exit status (for a failure message)."""
        return "\n".join(
            f"--- {name} (exit {proc.poll()}):\n" + "\n".join(self.log(name).splitlines()[-lines:])
            for name, proc in self.procs.items())

    def signal(self, name: str, sig: int) -> None:
        self.procs[name].send_signal(sig)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def stop_all(self, timeout: float = 30) -> dict[str, int]:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = {}
        deadline = load.deadline(timeout)
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(max(0.1, deadline.left()))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = proc.wait()
        return codes
