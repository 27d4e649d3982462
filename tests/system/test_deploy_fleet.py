"""The shipped deployments are least-privilege end to end: the fleet (migrate, scheduler,
website, one background and one interactive collector) runs with exactly the database URLs of
the shipped files — the env examples in the order the systemd units read them, or the compose
file's — against a PostgreSQL with TLS and SCRAM passwords, after the operator steps done the
documented way (docs/operations.md, "First install" and "Database roles": the owner made by the
cluster's administrator, `bf4ps db upgrade` as that owner, one login per process kind with
deploy/sql/bf4ps-login.sql; the compose file's own initdb script and `logins` service script).
pg_stat_activity then shows every process connected as its own login, the website not as the
scheduler, nothing as a superuser.

Only placeholders that point at the test's cluster are substituted in the URLs: the host names
(db.example.internal, bf4sw-db.example.internal, compose's `postgres`) by `localhost` (the name
the test server's certificate lists), the port, the passwords (CHANGE-ME, compose's ${…}
variables) and the CA file (/etc/bf4ps/*.crt) by the test CA's."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psutil
import psycopg
import pytest
import yaml
from psycopg import sql

from bf4ps.demo.run import free_port
from tests import load
from tests.fleet import simulator
from tests.procs import bf4ps_env
from tests.system.test_roles import stop
from tests.tlspg import TlsServer, server_binaries, tls_server
from tests.unit.test_deploy_files import CONTAINER, parse_env, read_unit, values

pytestmark = [
    pytest.mark.server_features, pytest.mark.slow, pytest.mark.skipif(
    server_binaries() is None, reason="needs Debian's PostgreSQL server (built with SSL)")]

ROOT = Path(__file__).resolve().parents[2]
LOGIN_SQL = ROOT / "deploy" / "sql" / "bf4ps-login.sql"
# the test's cluster: its administrator over the socket and TLS, everyone else SCRAM over TLS
HBA = """\
local   all all                        trust
hostssl all postgres 127.0.0.1/32      trust
hostssl all all      127.0.0.1/32      scram-sha-256
host    all all      127.0.0.1/32      reject
"""
GROUP = {"scheduler": "bf4ps_scheduler", "web": "bf4ps_web", "background": "bf4ps_collector",
         "interactive": "bf4ps_collector"}
FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25",
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.1", "BF4PS_SCHEDULER_TICK_SECONDS": "0.5",
        "BF4PS_BF4SW_SYNC_SECONDS": "2", "BF4PS_SWEEP_SECONDS": "2"}


@dataclass(frozen=True)
class Deployment:
    """The shipped URL of each process (placeholders still in), and its collectors' egresses."""

    urls: dict[str, str]  # migrate, scheduler, web, background, interactive
    bf4sw_url: str
    egress: dict[str, str]


def _unit_env(unit: str, files: dict[str, str]) -> dict[str, str]:
    """The variables a systemd unit ends up with: its EnvironmentFile= lines in order, each
    an env example (a later file's value wins, as systemd does)."""
    env: dict[str, str] = {}
    for path in values(read_unit(unit), "Service", "EnvironmentFile"):
        env |= parse_env(files[path.lstrip("-")])[0]
    return env


def systemd_deployment() -> Deployment:
    files = {"/etc/bf4ps/central.env": "central.env.example",
             "/etc/bf4ps/web.env": "web.env.example",
             "/etc/bf4ps/migrate.env": "migrate.env.example"}
    bg = files | {"/etc/bf4ps/collector-%i.env": "collector.env.example"}
    fg = files | {"/etc/bf4ps/collector-%i.env": "collector-interactive.env.example"}
    central = _unit_env("bf4ps-scheduler.service", files)
    background = _unit_env("bf4ps-collector@.service", bg)
    interactive = _unit_env("bf4ps-collector@.service", fg)
    return Deployment(
        urls={"migrate": _unit_env("bf4ps-migrate.service", files)["BF4PS_DATABASE_URL"],
              "scheduler": central["BF4PS_DATABASE_URL"],
              "web": _unit_env("bf4ps-web.service", files)["BF4PS_DATABASE_URL"],
              "background": background["BF4PS_DATABASE_URL"],
              "interactive": interactive["BF4PS_DATABASE_URL"]},
        bf4sw_url=central["BF4PS_BF4SW_DATABASE_URL"],
        egress={"background": background["COLLECTOR_EGRESS"],
                "interactive": interactive["COLLECTOR_EGRESS"]})


def compose_deployment() -> Deployment:
    """The compose file's services; its background collectors run on the BF4SW nodes, with
    collector.env.example's URL (deploy/container/README.md)."""
    services = yaml.safe_load((CONTAINER / "compose.yaml").read_text())["services"]
    url = {name: svc["environment"]["BF4PS_DATABASE_URL"] for name, svc in services.items()
           if "BF4PS_DATABASE_URL" in svc.get("environment", {})}
    interactive = services["collector-interactive"]["command"]
    node = parse_env("collector.env.example")[0]
    return Deployment(
        urls={"migrate": url["migrate"], "scheduler": url["scheduler"], "web": url["web"],
              "background": node["BF4PS_DATABASE_URL"],
              "interactive": url["collector-interactive"]},
        bf4sw_url=parse_env("central.env.example")[0]["BF4PS_BF4SW_DATABASE_URL"],
        egress={"background": node["COLLECTOR_EGRESS"],
                "interactive": _default(interactive[interactive.index("--egress") + 1])})


def _default(value: str) -> str:
    """A compose `${VAR:-default}` as its default."""
    m = re.fullmatch(r"\$\{\w+:-([^}]*)\}", value)
    return m[1] if m else value


def user_of(url: str) -> str:
    return unquote(urlsplit(_compose_free(url, {})).username or "")


def _compose_free(url: str, passwords: dict[str, str]) -> str:
    """Compose's ${VAR:?message} placeholders by the test's values (passwords by variable)."""
    return re.sub(r"\$\{(\w+)(?::[?-][^}]*)?\}", lambda m: passwords.get(m[1], "x"), url)


def on_cluster(url: str, server: TlsServer, passwords: dict[str, str]) -> str:
    """`url` pointed at the test's cluster: only host, port, password and CA file change."""
    url = _compose_free(url, passwords)
    parts = urlsplit(url)
    user = unquote(parts.username or "")
    netloc = f"{user}:{passwords[user]}@localhost:{server.port}"
    query = re.sub(r"sslrootcert=/etc/bf4ps/[\w.-]+\.crt", f"sslrootcert={server.ca}",
                   parts.query)
    return parts._replace(netloc=netloc, query=query).geturl()


@pytest.fixture(params=["systemd", "compose"])
def deployment(request: pytest.FixtureRequest) -> Deployment:
    return systemd_deployment() if request.param == "systemd" else compose_deployment()


@pytest.fixture
def cluster() -> Iterator[TlsServer]:
    with tls_server(HBA) as server:
        yield server


def admin(server: TlsServer, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(server.url(dbname=dbname), autocommit=True)


def psql() -> str:
    bin_path = server_binaries()
    assert bin_path is not None
    return str(bin_path / "psql")


def make_owner(server: TlsServer, compose: bool, password: str) -> None:
    """"First install", step 1: the cluster's administrator makes the owner and its database
    (the compose file: its initdb script does, as the image's first start would)."""
    if compose:
        env = dict(os.environ, POSTGRES_USER="postgres", BF4PS_OWNER_PASSWORD=password,
                   PGHOST=str(server.socket_dir), PGPORT=str(server.port),
                   PATH=f"{Path(psql()).parent}:{os.environ['PATH']}")
        done = subprocess.run(["sh", str(CONTAINER / "initdb" / "10-bf4ps-owner.sh")], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return
    with admin(server) as conn:
        conn.execute(sql.SQL("CREATE ROLE bf4ps LOGIN CREATEROLE PASSWORD {}").format(
            sql.Literal(password)))
        conn.execute("CREATE DATABASE bf4ps OWNER bf4ps")


def make_logins(server: TlsServer, dep: Deployment, compose: bool,
                passwords: dict[str, str], owner_url: str) -> None:
    """"Database roles": one login per process kind with its group role, as the owner, by
    deploy/sql/bf4ps-login.sql (the compose file: its `logins` script, then the BF4SW nodes'
    collector login the documented way)."""
    todo = {user_of(dep.urls[kind]): GROUP[kind] for kind in GROUP}
    if compose:
        env = dict(os.environ, PGHOST="localhost", PGPORT=str(server.port), PGDATABASE="bf4ps",
                   PGUSER="bf4ps", PGPASSWORD=passwords["bf4ps"], PGSSLMODE="require",
                   BF4PS_LOGIN_SQL=str(LOGIN_SQL),
                   PATH=f"{Path(psql()).parent}:{os.environ['PATH']}",
                   **{var: passwords[var] for var in passwords if var.startswith("BF4PS_")})
        done = subprocess.run(["sh", str(CONTAINER / "logins.sh")], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        for user in ("central_scheduler", "central_web", "web_collector"):
            todo.pop(user)
    for user, role in todo.items():
        done = subprocess.run(
            [psql(), owner_url, "-X", "-q", "-v", f"login={user}", "-v", f"role={role}",
             "-f", str(LOGIN_SQL)],
            env=dict(os.environ, BF4PS_LOGIN_PASSWORD=passwords[user]),
            capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and f"login {user} in {role}" in done.stdout, \
            done.stdout + done.stderr


def make_bf4sw(server: TlsServer, user: str, password: str) -> None:
    """BF4SW's side: its table, filled, and a read-only login (docs/operations.md)."""
    from bf4ps.db.connect import connection
    from bf4ps.sim.bf4sw import population

    with admin(server) as conn:
        conn.execute("CREATE DATABASE bf4sw")
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(user), sql.Literal(password)))

    async def fill() -> None:
        async with connection(server.url(dbname="bf4sw")) as sw:
            await population.fill(sw, 60, seed=5)
    asyncio.run(fill())
    with admin(server, "bf4sw") as conn:
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
            sql.Identifier(user)))


def start(name: str, url: str, data_dir: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    log = open(data_dir / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "bf4ps.cli.main", *args],
        env=bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data_dir / name),
                      PYTHONUNBUFFERED="1", **env),
        stdout=log, stderr=subprocess.STDOUT, text=True)


def sessions(server: TlsServer, proc: subprocess.Popen[str]) -> set[tuple[str, str, bool]]:
    """(database, login, superuser?) of every session of `proc` (and its children), matched
    by the client ports of its connections to the server."""
    root = psutil.Process(proc.pid)
    ports = {c.laddr.port for p in (root, *root.children(recursive=True))
             for c in p.net_connections(kind="tcp")
             if c.raddr and c.raddr.port == server.port}
    if not ports:
        return set()
    with admin(server) as conn:
        rows = conn.execute(
            "SELECT a.datname, a.usename, r.rolsuper FROM pg_stat_activity a "
            "JOIN pg_roles r ON r.oid = a.usesysid WHERE a.client_port = ANY(%s)",
            [sorted(ports)]).fetchall()
    return {(str(d), str(u), bool(s)) for d, u, s in rows}


def wait_until(check: object, what: str, procs: dict[str, subprocess.Popen[str]],
               logs: Path, timeout: float = 120) -> None:
    deadline = load.deadline(timeout)
    while not check():  # type: ignore[operator]
        dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
        assert not dead, (dead, {n: (logs / f"{n}.log").read_text()[-1500:] for n in dead})
        assert not deadline.expired(), f"timed out waiting for {what}: " + str(
            {n: (logs / f"{n}.log").read_text()[-800:] for n in procs})
        time.sleep(0.5)


def test_each_process_connects_as_its_own_login(deployment: Deployment, cluster: TlsServer,
                                                tmp_path: Path) -> None:
    dep, server = deployment, cluster
    compose = "${" in dep.urls["web"]
    users = {kind: user_of(url) for kind, url in dep.urls.items()}
    # a different password per login; compose's come from its .env variables
    passwords = {user: uuid.uuid4().hex for user in users.values()}
    passwords |= {m[1]: passwords[user_of(url)] for url in dep.urls.values()
                  for m in re.finditer(r"\$\{(\w+_PASSWORD)", url)}
    sw_user = user_of(dep.bf4sw_url)
    passwords[sw_user] = uuid.uuid4().hex
    urls = {kind: on_cluster(url, server, passwords) for kind, url in dep.urls.items()}
    # least privilege in the files themselves: one login per process kind, TLS everywhere
    assert users["web"] != users["scheduler"] and users["migrate"] not in (
        users["scheduler"], users["web"], users["background"], users["interactive"]), users
    assert "postgres" not in users.values(), users
    for kind, url in dep.urls.items():
        mode = re.search(r"sslmode=([\w-]+)", url)
        assert mode and mode[1] in ("require", "verify-full"), (kind, url)
    assert "sslmode=verify-full" in dep.urls["background"]  # it crosses hosts

    make_owner(server, compose, passwords[users["migrate"]])
    make_bf4sw(server, sw_user, passwords[sw_user])
    done = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "db", "upgrade"],
                          env=bf4ps_env(BF4PS_DATABASE_URL=urls["migrate"],
                                        BF4PS_DATA_DIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    make_logins(server, dep, compose, passwords, urls["migrate"])

    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        with simulator(speed=40, min_interval=0.25) as sim:
            env = FAST | {"BF4PS_BATTLELOG_BASE_URL": sim.base_url}
            for kind in ("background", "interactive"):
                (tmp_path / kind).mkdir()
            procs["scheduler"] = start(
                "scheduler", urls["scheduler"], tmp_path, "scheduler", "run",
                BF4PS_BF4SW_DATABASE_URL=on_cluster(dep.bf4sw_url, server, passwords), **env)
            port = free_port()
            procs["web"] = start("web", urls["web"], tmp_path, "web", "run",
                                 BF4PS_WEB_HOST="127.0.0.1", BF4PS_WEB_PORT=str(port),
                                 BF4PS_OPS_USERNAME="ops", BF4PS_OPS_PASSWORD="deploy-pw",
                                 BF4PS_SECRET_KEY="deploy-key", **env)
            for kind in ("background", "interactive"):
                procs[kind] = start(kind, urls[kind], tmp_path, "collector", "run", "--name",
                                    f"deploy-{kind}", "--lane", kind, "--egress",
                                    dep.egress[kind], **env)
            with admin(server, "bf4ps") as watch:
                def joined() -> bool:
                    row = watch.execute(
                        "SELECT count(*) FROM collectors WHERE last_heartbeat_at > "
                        "now() - interval '5 seconds'").fetchone()
                    return bool(row and row[0] == 2)
                wait_until(joined, "both collectors heartbeating", procs, tmp_path)
                wait_until(lambda: all(sessions(server, procs[k]) for k in procs),
                           "every process connected", procs, tmp_path)
                seen = {kind: sessions(server, proc) for kind, proc in procs.items()}
                owner = watch.execute(
                    "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = "
                    "current_schema()").fetchall()
            codes = stop(procs)
    finally:
        stop(procs)
    print("sessions:", seen)
    for kind, got in seen.items():
        assert {(db, user) for db, user, _ in got if db == "bf4ps"} == {
            ("bf4ps", users[kind])}, (kind, got)
        assert not any(superuser for _, _, superuser in got), (kind, got)
    assert {(db, user) for db, user, _ in seen["scheduler"] if db == "bf4sw"} == {
        ("bf4sw", sw_user)}
    assert users["web"] != users["scheduler"]
    # migrations ran as the owner, who is no superuser either
    assert owner == [(users["migrate"],)]
    with admin(server) as conn:
        roles = dict(conn.execute("SELECT rolname, rolsuper FROM pg_roles WHERE rolname = "
                                  "ANY(%s)", [sorted(set(users.values()))]).fetchall())
    assert roles == {user: False for user in set(users.values())}, roles
    # an authentication error at start is no outage: the collector exits at once, no retry (a
    # retry would wait out the hour it is allowed, far past the run's timeout)
    wrong = urls["background"].replace(passwords[users["background"]], "wrong-password")
    refused = subprocess.run(
        [sys.executable, "-m", "bf4ps.cli.main", "collector", "run", "--name", "deploy-wrong",
         "--egress", "eg-wrong"], env=bf4ps_env(BF4PS_DATABASE_URL=wrong,
                                                  BF4PS_DB_START_WAIT_SECONDS="3600",
                                                  BF4PS_DATA_DIR=str(tmp_path / "background")),
        capture_output=True, text=True, timeout=load.scaled(120))
    assert refused.returncode == 1 and "password authentication failed" in refused.stderr, \
        refused.stderr
    assert "database unavailable at collector start" not in refused.stderr
    logs = {n: (tmp_path / f"{n}.log").read_text() for n in codes}
    web = codes.pop("web")  # uvicorn re-raises the SIGTERM it handled
    assert web in (0, -15) and set(codes.values()) == {0}, (codes, logs)
    assert not any(re.search(r"permission denied|must be owner", t) for t in logs.values()), {
        n: [x for x in t.splitlines() if "permission denied" in x][:3] for n, t in logs.items()}
