"""Run a command and print the CPU-seconds the whole machine was busy meanwhile, and the wall
time: `python -m bench.cpu_seconds -- .venv/bin/python -m pytest -q -n 4`.

Busy time is read from /proc/stat (every CPU's user, nice, system, irq, softirq and steal
ticks; idle and iowait are not busy), so it counts what the command started that left its
process tree too (the embedded PostgreSQL servers daemonize) — and anything else running on
the machine then: measure on a quiet machine, or read the figure as an upper bound. The
command's exit status is passed on; the figures go to stderr, last, in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system [idle iowait] irq softirq steal
TICK = os.sysconf("SC_CLK_TCK")


def busy_seconds(stat: Path = Path("/proc/stat")) -> float:
    """The machine's busy CPU-seconds since boot (all cores summed)."""
    for line in stat.read_text().splitlines():
        if line.startswith("cpu "):
            ticks = [int(v) for v in line.split()[1:]]
            return sum(ticks[i] for i in BUSY_FIELDS if i < len(ticks)) / TICK
    raise RuntimeError(f"no aggregate cpu line in {stat}")


def measure(command: list[str]) -> tuple[int, float, float]:
    """(exit status, wall seconds, system-wide busy CPU-seconds) of running `command`."""
    busy, wall = busy_seconds(), time.monotonic()
    code = subprocess.call(command)
    return code, time.monotonic() - wall, busy_seconds() - busy


def main(argv: list[str]) -> int:
    command = argv[1:] if argv and argv[0] == "--" else argv
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    load = os.getloadavg()
    code, wall, cpu = measure(command)
    cores = os.cpu_count() or 1
    print(f"cpu_seconds: {cpu:.0f} CPU-s busy system-wide, {wall:.0f} s wall "
          f"({cpu / max(wall, 1e-9):.2f} of {cores} cores busy on average; load "
          f"{load[0]:.1f} at the start; exit {code})", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
