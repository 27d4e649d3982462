"""A private primary and a streaming replica of it: Debian's PostgreSQL binaries (package
postgresql, tests/tlspg.py's server_binaries) for both. The embedded package's server cannot be
the primary of a Debian standby: physical replication needs one major version on both ends (the
embedded server is 18, Debian's 15). The replica is made the way an operator makes one:
`pg_basebackup -R` (which writes standby.signal and primary_conninfo) from the running primary,
then started as a hot standby."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.tlspg import _as_server_user, _free_port, server_binaries

HBA = """\
local   all         all                trust
host    all         all  127.0.0.1/32  trust
host    replication all  127.0.0.1/32  trust
"""


@dataclass
class Node:
    pgdata: Path
    port: int
    log: Path

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"


@dataclass
class Pair:
    bin: Path
    primary: Node
    replica: Node

    def _ctl(self, node: Node, *args: str) -> None:
        _as_server_user([str(self.bin / "pg_ctl"), "-D", str(node.pgdata), "-w", *args])

    def start(self, node: Node) -> None:
        options = (f"-c listen_addresses=127.0.0.1 -c port={node.port} "
                   f"-c unix_socket_directories={node.pgdata} -c fsync=off")
        self._ctl(node, "-o", options, "-l", str(node.log), "start")

    def stop(self, node: Node, mode: str = "fast") -> None:
        self._ctl(node, "-m", mode, "stop")


def _owned(path: Path) -> None:
    import os

    if os.geteuid() == 0:
        shutil.chown(path, "embedded_postgres", "embedded_postgres")


@contextmanager
def primary_and_replica() -> Iterator[Pair]:
    bin_path = server_binaries()
    assert bin_path is not None, "no Debian PostgreSQL server binaries"
    base = Path(tempfile.mkdtemp(prefix="bf4ps-replica-"))
    base.chmod(0o755)
    _owned(base)
    primary = Node(base / "primary", _free_port(), base / "primary.log")
    replica = Node(base / "replica", _free_port(), base / "replica.log")
    pair = Pair(bin_path, primary, replica)
    _as_server_user([str(bin_path / "initdb"), "-D", str(primary.pgdata), "-U", "postgres",
                     "--auth=trust", "--no-sync", "--locale=C", "--encoding=UTF8"])
    (primary.pgdata / "pg_hba.conf").write_text(HBA)
    pair.start(primary)
    started = [primary]
    try:
        _as_server_user([str(bin_path / "pg_basebackup"), "-h", "127.0.0.1", "-p",
                         str(primary.port), "-U", "postgres", "-D", str(replica.pgdata),
                         "-R", "-X", "stream", "--no-sync"])
        pair.start(replica)
        started.append(replica)
        yield pair
    finally:
        for node in started:
            subprocess.run([str(bin_path / "pg_ctl"), "-D", str(node.pgdata), "-m",
                            "immediate", "stop"], user="embedded_postgres"
                           if _is_root() else None, capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def _is_root() -> bool:
    import os

    return os.geteuid() == 0
