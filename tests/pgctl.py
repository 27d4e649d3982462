"""A private embedded PostgreSQL that a test may restart (never the suite's shared server)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bf4ps.db import embedded, migrate
from bf4ps.db.connect import ensure_database, with_dbname
from tests import load


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


async def migrated_database(server_url: str) -> str:
    """The private server's `bf4ps` database, made and migrated: its URL."""
    await ensure_database(server_url, "bf4ps")
    url = with_dbname(server_url, "bf4ps")
    await migrate.upgrade(url)
    return url


def restart(pgdata: Path, down_seconds: float = 0.0, fast_seconds: float = 20) -> str | None:
    """`pg_ctl restart -m fast`, as a stop and a start (so the server keeps writing its log to
    `pgdata/log`): every connection is cut, the server is back in a moment; with
    `down_seconds`, it stays down that long. Returns None, or what held up a fast shutdown that
    did not finish in time (its processes and the log's tail) when it had to be made immediate."""
    options, stuck = stop(pgdata, fast_seconds)
    time.sleep(max(0.0, down_seconds))
    start(pgdata, options)
    return stuck


def crash(pgdata: Path) -> list[str]:
    """`pg_ctl stop -m immediate`: the server ends with no shutdown checkpoint, as in a crash
    (its next start runs crash recovery, which empties unlogged tables); returns its options,
    for start()."""
    args = _options(pgdata)
    _pg_ctl([_pg_ctl_path(), "-D", str(pgdata), "-w", "-m", "immediate", "stop"])
    return args


def _options(pgdata: Path) -> list[str]:
    """The command line the server was started with (postmaster.opts), less the binary and -D."""
    args = shlex.split((pgdata / "postmaster.opts").read_text())[1:]
    if "-D" in args:
        at = args.index("-D")
        del args[at:at + 2]
    return args


def stop(pgdata: Path, fast_seconds: float = 20) -> tuple[list[str], str | None]:
    """`pg_ctl stop -m fast`; returns the server's options, for start(), and a diagnosis when
    the fast shutdown did not end within its (load-scaled) time and was made immediate."""
    args = _options(pgdata)
    wait = max(1, round(load.scaled(fast_seconds)))
    fast = [_pg_ctl_path(), "-D", str(pgdata), "-w", "-t", str(wait), "-m", "fast", "stop"]
    try:
        _pg_ctl(fast, timeout=wait + 30)
        return args, None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        stuck = f"fast shutdown unfinished after {wait} s: {diagnose(pgdata)}"
    _pg_ctl([_pg_ctl_path(), "-D", str(pgdata), "-w", "-m", "immediate", "stop"])
    return args, stuck


def start(pgdata: Path, options: list[str]) -> None:
    wait = round(load.scaled(30))
    command = [_pg_ctl_path(), "-D", str(pgdata), "-w", "-t", str(wait), "-l",
               str(pgdata / "log"), "-o", shlex.join(options), "start"]
    try:
        _pg_ctl(command, timeout=wait + 30)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"PostgreSQL did not start: {diagnose(pgdata)}") from e


def diagnose(pgdata: Path) -> str:
    """The server's processes (their titles say what each is doing) and its log's tail."""
    procs = subprocess.run(["ps", "-e", "-o", "pid,stat,wchan:20,etimes,args"],
                           capture_output=True, text=True, check=False).stdout.splitlines()
    server = [line for line in procs if "postgres" in line and "ps -e" not in line]
    log = pgdata / "log"
    tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
    return "processes:\n" + "\n".join(server) + "\nlog:\n" + "\n".join(tail)


def base_backup(server_url: str, pgdata: Path) -> Path:
    """A copy of the running server's data directory (`pg_basebackup`, its WAL streamed along),
    beside `pgdata`: what an operator keeps as a physical backup."""
    backup = pgdata.parent / "base-backup"
    backup.mkdir(mode=0o700)
    if os.geteuid() == 0:
        shutil.chown(backup, "embedded_postgres", "embedded_postgres")
    _pg_ctl([embedded_program("pg_basebackup"), "-d", server_url, "-D", str(backup), "-X", "stream",
             "-c", "fast", "--no-sync"])
    return backup


def put_back(pgdata: Path, backup: Path) -> None:
    """Restore a base backup onto the same cluster, as an operator would: the server stopped,
    its data directory set aside, the backup's put in its place, the server started (crash
    recovery replays the backup's WAL: the same system identifier and timeline)."""
    options, _ = stop(pgdata)
    pgdata.rename(pgdata.parent / "data-after-backup")
    # the socket's lock file: this server keeps its socket in the data directory, so the copy
    # took the old server's lock along (a runtime file, like postmaster.pid, which it omits)
    for lock in backup.glob(".s.PGSQL.*.lock"):
        lock.unlink()
    backup.rename(pgdata)
    start(pgdata, options)


def _pg_ctl_path() -> str:
    return embedded_program("pg_ctl")


def embedded_program(name: str) -> str:
    """A program of the embedded PostgreSQL's (pg_ctl, pg_basebackup, pg_dump, ...)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)



def _pg_ctl(command: list[str], timeout: float = 90) -> None:
    user = "embedded_postgres" if os.geteuid() == 0 else None
    # no pipes: the restarted postmaster would inherit them and keep run() waiting
    subprocess.run(command, check=True, user=user, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=timeout)
