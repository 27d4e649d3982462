"""Login roles for the least-privilege roles' tests (migrations 0013, 0018): one login per
group role, the operator's granted by the owner, the others by that operator, both through the
query `bf4ps db grant` runs (in process: the command itself is tested once, in
tests/system/test_roles.py); dropped after the test."""

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

from bf4ps.db.queries import q
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


def grant(url: str, role: str, login: str) -> None:
    """What `bf4ps db grant ROLE LOGIN` does, as the login of `url`."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(q("grant_role"), {"role": role, "login": login})


@pytest.fixture
def logins(pg_server_url: str, db_url: str) -> Iterator[Logins]:
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
        grant(db_url, "bf4ps_operator", names["operator"])
        for role in ("collector", "scheduler", "web"):
            grant(urls["operator"], f"bf4ps_{role}", names[role])
        yield Logins(names, urls)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            for name in names.values():
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
