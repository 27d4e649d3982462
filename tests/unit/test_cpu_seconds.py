"""bench/cpu_seconds.py: the machine's busy time from /proc/stat, and the command's status."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import cpu_seconds


def test_busy_time_counts_user_nice_system_irq_softirq_steal_not_idle_or_iowait(
        tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    #                user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 20 30 9000 500 4 6 40 0 0\ncpu0 50 10 15 4500 250 2 3 20 0 0\n")
    assert cpu_seconds.busy_seconds(stat) == (100 + 20 + 30 + 4 + 6 + 40) / cpu_seconds.TICK


def test_the_command_runs_and_its_status_is_passed_on() -> None:
    code, wall, cpu = cpu_seconds.measure([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert code == 3 and wall > 0 and cpu >= 0
    assert cpu_seconds.main([]) == 2  # no command: the usage, and a status saying so
