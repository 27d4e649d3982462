"""Starting real worker processes for concurrency and crash tests."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bf4ps.settings import child_env

REPO = Path(__file__).resolve().parent.parent


def bf4ps_env(**settings: str) -> dict[str, str]:
    """This environment for a child `bf4ps` process: no BF4PS_* setting of the developer's
    leaks in, the source tree is on the path, then `settings`."""
    return child_env({"PYTHONPATH": str(REPO / "src"), **settings})


# Battlelog is another machine: the suite's load never delays its clock. The simulator that
# stands in for it runs at this niceness (root may raise a priority; elsewhere it runs as is)
# so that the arrival times it judges rate limits by are when requests arrived, not when a
# busy machine let it read them.
REMOTE_NICENESS = -10


def as_remote(pid: int) -> None:
    """Give a process standing in for a remote service (the simulator) the CPU first."""
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpriority(os.PRIO_PROCESS, pid, REMOTE_NICENESS)


def spawn(script: str, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "workers" / script), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)


def read_json_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"worker exited without output: {err[-2000:]}")
    return dict(json.loads(line))


@contextlib.contextmanager
def web_run(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[str]]:
    """`bf4ps web run` with `env` (its BF4PS_WEB_HOST/PORT among them), its output in `log`,
    yielded once it serves; stopped on leaving."""
    from tests import load

    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", "web", "run"],
                                env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        end = load.deadline(60)
        while "Application startup complete" not in log.read_text():
            assert proc.poll() is None and not end.expired(), log.read_text()[-3000:]
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        proc.wait(60)
