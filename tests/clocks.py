"""Skewed host clocks for real processes, with Debian's libfaketime (LD_PRELOAD).

The offset is read from a file (FAKETIME_TIMESTAMP_FILE, re-read every second), so a test can
put a host's clock right while its collector runs. libfaketime shifts the process's monotonic
clock by the same offset (FAKETIME_DONT_FAKE_MONOTONIC is not set): a constant shift of the
monotonic clock is invisible (only its differences mean anything), so with a constant offset
this is a host whose wall clock is wrong, as on a host without time sync. It is also the only
mode Python runs under here: with FAKETIME_DONT_FAKE_MONOTONIC=1, libfaketime 0.9.10 makes
every time.sleep() fail with EINVAL. When the file's offset changes, both clocks jump by the
change (the event loop's timers fire early or late once)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def libfaketime() -> Path:
    """The preload library of Debian's libfaketime; the test is skipped without it."""
    try:
        out = subprocess.run(["dpkg", "-L", "libfaketime"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    for line in out.splitlines():
        if line.endswith("/libfaketime.so.1"):
            return Path(line)
    pytest.skip("libfaketime.so.1 not found in the libfaketime package")


class SkewedClock:
    """A clock `offset` seconds off (positive: ahead); `set` changes it while it runs."""

    def __init__(self, folder: Path, name: str, offset: float) -> None:
        self.file = folder / f"{name}.faketime"
        self.set(offset)
        self.lib = libfaketime()

    def set(self, offset: float) -> None:
        self.file.write_text(f"{offset:+.3f}\n")

    def env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(self.lib), "FAKETIME_TIMESTAMP_FILE": str(self.file),
                "FAKETIME_CACHE_DURATION": "1"}
