"""One embedded server shared by many processes: short-lived commands starting and leaving at
the same time never detach a long-running one, so the server keeps running under it and stops
when the last process leaves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.procs import REPO

pytestmark = pytest.mark.slow

HOLD = ("import sys; from pathlib import Path; from bf4ps.db import embedded; "
        "print(embedded.start(Path(sys.argv[1])), flush=True); sys.stdin.readline()")
TOUCH = ("import sys; from pathlib import Path; from bf4ps.db import embedded; "
         "embedded.start(Path(sys.argv[1]))")  # attach, then detach at exit (as `bf4ps status`)


def python(code: str, pgdata: Path, *, hold: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    pipe = subprocess.PIPE if hold else None
    return subprocess.Popen([sys.executable, "-c", code, str(pgdata)], env=env, text=True,
                            stdin=pipe, stdout=pipe)


def attached(pgdata: Path) -> list[int]:
    return list(json.loads((pgdata / ".handle_pids.json").read_text() or "[]"))


def test_concurrent_short_commands_never_detach_a_long_running_process(tmp_path: Path) -> None:
    """Before the attached-pids file was cleaned under the package's lock, 8 commands at once
    lost the long-running process from it in 5 rounds of 6 (the helper's fleet run: the last
    collector to stop took the database down under the website)."""
    pgdata = tmp_path / "pg"
    holder = python(HOLD, pgdata, hold=True)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        url = holder.stdout.readline().strip()
        assert url.startswith("postgresql://"), url
        for _ in range(4):
            touches = [python(TOUCH, pgdata) for _ in range(8)]
            assert [t.wait(120) for t in touches] == [0] * 8
            assert attached(pgdata) == [holder.pid]
            with psycopg.connect(url, connect_timeout=5) as conn:  # still up under the holder
                assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        assert holder.wait(60) == 0
    assert attached(pgdata) == []
    assert not (pgdata / "postmaster.pid").exists()  # the last one out stopped it


@pytest.mark.parametrize("torn", ["", "[12", "{}", "null"])
def test_a_torn_pids_file_is_rewritten(tmp_path: Path, torn: str) -> None:
    """A crash between the package's truncate and write leaves a file its own reader cannot
    parse: every later start would fail on it, so it is rewritten (the dead are dropped, the
    live kept when it can be read)."""
    import contextlib

    from bf4ps.db import embedded

    handle = tmp_path / ".handle_pids.json"
    handle.write_text(torn)
    embedded._drop_dead_pids(tmp_path, contextlib.nullcontext())
    assert json.loads(handle.read_text()) == []
    handle.write_text(json.dumps([os.getpid(), 2**22 + 12345]))  # alive, and (surely) not
    embedded._drop_dead_pids(tmp_path, contextlib.nullcontext())
    assert json.loads(handle.read_text()) == [os.getpid()]
