"""The namespaces of a killed run never break the next one: sweep_stale removes them."""

from __future__ import annotations

import subprocess

import pytest

from tests.netns import net

pytestmark = [pytest.mark.xdist_group("netns")]


def test_a_killed_runs_namespaces_are_swept() -> None:
    why = net.available()
    if why is not None:
        pytest.skip(f"multi-host tests: {why}")
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid no process has now: the run that made these was killed
    stale = [f"{net.STEM}-{dead.pid}-sw", f"{net.STEM}-{dead.pid}-c1"]
    for ns in stale:
        net.ip("netns", "add", ns)
    try:
        assert set(stale) <= set(net.sweep_stale())
        assert not set(stale) & set(net._namespaces())
    finally:
        for ns in stale:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
