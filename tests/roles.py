"""Login roles for the least-privilege roles' tests (migrations 0013, 0018): one login per
group role, the operator's granted by the owner, the others by that operator, both through
`bf4ps db grant`; dropped after the test."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.procs import bf4ps_env

ROLES = ("collector", "scheduler", "web", "operator")


@dataclass(frozen=True)
class Logins:
    names: dict[str, str]
    urls: dict[str, str]  # role -> the test database's URL as that role's login


def as_login(url: str, user: str, password: str) -> str:
    params = conninfo_to_dict(url)
    params.update(user=user, password=password)
    return make_conninfo("", **params)


def bf4ps_cli(url: str, *args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data_dir))
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def logins(pg_server_url: str, db_url: str, tmp_path: Path) -> Iterator[Logins]:
    """A login role per group role: the operator's granted by the owner, the others by that
    operator, both through `bf4ps db grant`."""
    tag = uuid.uuid4().hex[:8]
    names = {r: f"t_{tag}_{r}" for r in ROLES}
    password = uuid.uuid4().hex
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(name), sql.Literal(password)))
    urls = {r: as_login(db_url, n, password) for r, n in names.items()}
    try:
        done = bf4ps_cli(db_url, "db", "grant", "bf4ps_operator", names["operator"],
                         data_dir=tmp_path)
        assert done.returncode == 0, done.stderr
        for role in ("collector", "scheduler", "web"):
            done = bf4ps_cli(urls["operator"], "db", "grant", f"bf4ps_{role}", names[role],
                             data_dir=tmp_path)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == f"granted bf4ps_{role} to {names[role]}"
        yield Logins(names, urls)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            for name in names.values():
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
