"""The demo's child processes: each a `python -m bf4ps.cli.main ...` with its own log file,
stopped with SIGTERM (then SIGKILL after a grace period), newest first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Children:
    logs: Path
    env: dict[str, str]
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", *args], env=self.env,
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def adopt(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        self.procs.append((name, proc))

    def dead(self) -> list[str]:
        return [name for name, p in self.procs if p.poll() is not None]

    def stop(self, grace: float = 20.0, prefix: str = "") -> dict[str, int]:
        """Stop the children (those whose name starts with `prefix`): their exit codes."""
        chosen = [(name, p) for name, p in reversed(self.procs) if name.startswith(prefix)]
        for _, proc in chosen:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        codes = {}
        for name, proc in chosen:
            try:
                codes[name] = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                codes[name] = proc.wait()
        return codes
