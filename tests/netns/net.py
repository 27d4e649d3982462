"""Separate network hosts on one machine: Linux network namespaces joined by veth pairs to two
bridges in a switch namespace (all made with iproute2's `ip`; root only).

    {prefix}-sw   the switch: bridge `brdb` (10.250.1.0/24, the database network) and bridge
                  `brbl` (10.250.2.0/24, the path to Battlelog)
    {prefix}-db   the PostgreSQL host, 10.250.1.2
    {prefix}-bl   the Battlelog simulator host, 10.250.2.2
    {prefix}-cN   collector host N: 10.250.1.(10+N) to the database, 10.250.2.(10+N) to
                  Battlelog (its egress address)

Each host reaches a service only through its own veth into that service's bridge, so a host is
cut from one service by setting its switch-side veth down (`cut`), and healed by setting it up.
The addresses exist only inside these namespaces: nothing is routed off the machine. Names
carry the creating process's pid: `sweep_stale` deletes what a killed run left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field

STEM = "bf4nt"
DB_NET, BL_NET = "10.250.1", "10.250.2"
DB_ADDR, BL_ADDR = f"{DB_NET}.2", f"{BL_NET}.2"


class NetnsUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no `ip`, no permission)."""


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def available() -> str | None:
    """Why namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{STEM}-{os.getpid()}-probe"
    try:
        ip("netns", "add", probe)
        ip("netns", "del", probe)
    except (RuntimeError, OSError) as exc:
        return f"cannot make a network namespace: {exc}"
    return None


def _namespaces() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]


def _delete(ns: str) -> None:
    """Kill whatever still runs in the namespace, then delete it."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                          timeout=20).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def sweep_stale() -> list[str]:
    """Delete the namespaces of earlier runs whose process is gone (a killed test run)."""
    gone = []
    for ns in _namespaces():
        parts = ns.split("-")
        if len(parts) < 3 or parts[0] != STEM or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or _alive(pid):
            continue
        _delete(ns)
        gone.append(ns)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Net:
    """The namespaces of one run; `close` deletes every one (also after a failure)."""

    prefix: str = field(default_factory=lambda: f"{STEM}-{os.getpid()}")
    made: list[str] = field(default_factory=list)

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def _add(self, host: str) -> str:
        name = self.ns(host)
        ip("netns", "add", name)
        self.made.append(name)
        ip("-n", name, "link", "set", "lo", "up")
        return name

    def build(self, collectors: int) -> None:
        sw = self._add("sw")
        for bridge in ("brdb", "brbl"):
            ip("-n", sw, "link", "add", bridge, "type", "bridge")
            ip("-n", sw, "link", "set", bridge, "up")
        self._plug("db", "brdb", DB_ADDR)
        self._plug("bl", "brbl", BL_ADDR)
        for n in range(1, collectors + 1):
            self._plug(f"c{n}", "brdb", self.db_addr(n), fresh=True)
            self._plug(f"c{n}", "brbl", self.egress_addr(n), fresh=False)

    def _plug(self, host: str, bridge: str, addr: str, *, fresh: bool = True) -> None:
        """A veth from the host into the bridge: `{host}{d|b}` on the switch side, `db0` or
        `bl0` on the host side."""
        name = self._add(host) if fresh or self.ns(host) not in self.made else self.ns(host)
        inner = "db0" if bridge == "brdb" else "bl0"
        outer = self.port(host, bridge)
        sw = self.ns("sw")
        ip("-n", sw, "link", "add", outer, "type", "veth", "peer", "name", inner,
           "netns", name)
        ip("-n", sw, "link", "set", outer, "master", bridge, "up")
        ip("-n", name, "addr", "add", f"{addr}/24", "dev", inner)
        ip("-n", name, "link", "set", inner, "up")

    @staticmethod
    def port(host: str, bridge: str) -> str:
        return f"{host}{'d' if bridge == 'brdb' else 'b'}"

    @staticmethod
    def db_addr(n: int) -> str:
        return f"{DB_NET}.{10 + n}"

    @staticmethod
    def egress_addr(n: int) -> str:
        return f"{BL_NET}.{10 + n}"

    def cut(self, host: str, service: str) -> None:
        """Cut `host` from the database (`db`) or from Battlelog (`bl`)."""
        ip("-n", self.ns("sw"), "link", "set", self.port(host, _bridge(service)), "down")

    def heal(self, host: str, service: str) -> None:
        ip("-n", self.ns("sw"), "link", "set", self.port(host, _bridge(service)), "up")

    def exec_prefix(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(host)]

    def close(self) -> None:
        while self.made:
            _delete(self.made.pop())


def _bridge(service: str) -> str:
    if service not in ("db", "bl"):
        raise ValueError(f"service is 'db' or 'bl', not {service!r}")
    return "brdb" if service == "db" else "brbl"
