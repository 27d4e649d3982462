"""The deployment files (deploy/) and docs/operations.md agree with the code: unit files run
real `bf4ps` commands with real options, env examples name real settings with valid values,
the Grafana dashboard queries metrics the website really exposes, and every `bf4ps` command
line in the operations guide parses."""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from bf4ps.cli.main import cli
from bf4ps.domain import Lane
from bf4ps.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
SYSTEMD = DEPLOY / "systemd"
ENV_DIR = DEPLOY / "env"
CONTAINER = DEPLOY / "container"
DASHBOARD = DEPLOY / "grafana" / "bf4ps-dashboard.json"
METRICS_PY = ROOT / "src" / "bf4ps" / "web" / "metrics.py"
METRICS_FILES = sorted(METRICS_PY.parent.glob("metrics*.py"))  # metrics.py and its parts
OPERATIONS = ROOT / "docs" / "operations.md"
# Metrics the alert rules and the dashboard may name before web/metrics*.py exposes them (none
# now: every one they use is exposed).
PENDING_METRICS: set[str] = set()
PENDING_LABELS: dict[str, set[str]] = {}

SERVICES = sorted(p.name for p in SYSTEMD.glob("*.service"))
ENV_EXAMPLES = sorted(p.name for p in ENV_DIR.glob("*.env.example"))
COLLECTOR_VARS = {"COLLECTOR_EGRESS", "COLLECTOR_LANE", "COLLECTOR_EXTRA_ARGS"}
HARDENING = {
    "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
    "PrivateTmp": "yes", "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
}


# ---------------------------------------------------------------- helpers


class _MultiDict(dict[str, Any]):
    """configparser storage that keeps every value of a repeated key (systemd allows them)."""

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, list) and key in self:
            self[key].extend(value)
        else:
            super().__setitem__(key, value)


def read_unit(name: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, dict_type=_MultiDict,
                                          delimiters=("=",), empty_lines_in_values=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string((SYSTEMD / name).read_text())
    return parser


def values(unit: configparser.RawConfigParser, section: str, key: str) -> list[str]:
    """Every value of a (possibly repeated) key; configparser joins repeats with newlines."""
    raw = unit.get(section, key, fallback=None)
    return [] if raw is None else raw.split("\n")


def command_of(path: list[str]) -> click.Command:
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group), f"{' '.join(path)}: {cmd.name} has no subcommands"
        sub = cmd.commands.get(name)
        assert sub is not None, f"`bf4ps {' '.join(path)}`: no command {name!r}"
        cmd = sub
    return cmd


def split_command(args: list[str]) -> tuple[list[str], list[str]]:
    """(subcommand path, the rest) of the arguments after `bf4ps`."""
    path: list[str] = []
    cmd: click.Command = cli
    for i, arg in enumerate(args):
        if isinstance(cmd, click.Group) and arg in cmd.commands:
            path.append(arg)
            cmd = cmd.commands[arg]
        else:
            return path, args[i:]
    return path, []


def check_invocation(args: list[str], where: str) -> click.Command:
    """The subcommand exists, its --help runs, and every --option used is one of its options."""
    path, rest = split_command(args)
    assert path, f"{where}: `bf4ps {' '.join(args)}` names no subcommand"
    cmd = command_of(path)
    assert not isinstance(cmd, click.Group), f"{where}: `bf4ps {' '.join(path)}` is a group"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output, (where, result.output)
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for arg in rest:
        if arg.startswith("--"):
            option = arg.split("=", 1)[0]
            assert option in known, f"{where}: `bf4ps {' '.join(path)}` has no {option}"
    return cmd


def exec_start_args(unit: configparser.RawConfigParser, name: str) -> list[str]:
    (line,) = values(unit, "Service", "ExecStart")
    argv = shlex.split(line)
    assert argv[0] == "/opt/bf4ps/.venv/bin/bf4ps", f"{name}: runs {argv[0]}"
    return argv[1:]


def parse_env(name: str) -> tuple[dict[str, str], set[str]]:
    """(assignments, names of commented-out assignments) of an env example."""
    assigned: dict[str, str] = {}
    commented: set[str] = set()
    for number, raw in enumerate((ENV_DIR / name).read_text().splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*([A-Z][A-Z0-9_]*)=", line)
            if m:
                commented.add(m[1])
            continue
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
        assert m, f"{name}:{number}: not NAME=value: {raw!r}"
        assert m[1] not in assigned, f"{name}:{number}: {m[1]} assigned twice"
        assigned[m[1]] = m[2]
    return assigned, commented


# ---------------------------------------------------------------- systemd units


def test_the_expected_units_exist() -> None:
    assert set(SERVICES) == {"bf4ps-collector@.service", "bf4ps-scheduler.service",
                             "bf4ps-web.service", "bf4ps-migrate.service",
                             "bf4ps-bf4sw-sync.service"}
    assert (SYSTEMD / "bf4ps.target").exists()


@pytest.mark.parametrize("name", SERVICES)
def test_unit_parses_and_has_the_required_keys(name: str) -> None:
    unit = read_unit(name)
    assert {"Unit", "Service", "Install"} <= set(unit.sections()), name
    assert unit.get("Unit", "Description").strip(), name
    assert unit.get("Unit", "PartOf") == "bf4ps.target", name
    assert unit.get("Install", "WantedBy") == "bf4ps.target", name
    service = unit["Service"]
    user = service.get("User")  # the collectors' bf4ps; each central unit its own
    assert user in ("bf4ps", "bf4ps-web", "bf4ps-scheduler", "bf4ps-migrate"), name
    assert service.get("Group") == user, name
    assert f"BF4PS_DATA_DIR=/var/lib/{user}" in service.get("Environment", ""), name
    assert service.get("StateDirectory") == user, name
    assert service.get("ReadWritePaths") == f"/var/lib/{user}", name
    assert values(unit, "Service", "EnvironmentFile"), name
    for key, value in HARDENING.items():
        assert service.get(key) == value, f"{name}: {key}={service.get(key)!r}"
    assert "@system-service" in values(unit, "Service", "SystemCallFilter"), name
    if service.get("Type") == "oneshot":
        assert name == "bf4ps-migrate.service"
    else:
        assert service.get("Type") == "exec", name
        assert service.get("KillSignal") == "SIGTERM", name
    # processes that exit 0 on purpose (stopped, disabled, retired) must not be restarted
    assert service.get("Restart") == "on-failure", name


@pytest.mark.parametrize("name", SERVICES)
def test_exec_start_runs_a_real_bf4ps_command(name: str) -> None:
    args = exec_start_args(read_unit(name), name)
    check_invocation(args, name)


def test_collector_unit_runs_the_named_instance_and_stops_gently() -> None:
    unit = read_unit("bf4ps-collector@.service")
    args = exec_start_args(unit, "collector")
    cmd = check_invocation(args, "collector")
    assert cmd is command_of(["collector", "run"])
    assert args[args.index("--name") + 1] == "%i"  # %I would unescape "mak-01" to "mak/01"
    assert args[args.index("--lane") + 1] == "${COLLECTOR_LANE}"
    assert args[args.index("--egress") + 1] == "${COLLECTOR_EGRESS}"
    # unbraced: split into words, and no argument at all when empty
    assert "$COLLECTOR_EXTRA_ARGS" in args
    assert values(unit, "Service", "EnvironmentFile") == ["/etc/bf4ps/collector-%i.env"]
    service = unit["Service"]
    # the identity refusal (exit 2) must not loop
    assert "2" in service["RestartPreventExitStatus"].split()
    # an in-flight request (BF4PS_BATTLELOG_TIMEOUT_SECONDS) plus finalize fits in the stop
    timeout = int(service["TimeoutStopSec"].removesuffix("s"))
    assert timeout >= Settings.model_fields["battlelog_timeout_seconds"].default + 30
    assert service["MemoryMax"] == "200M" and service["CPUQuota"].endswith("%")
    assert service["IOSchedulingClass"] == "idle" and int(service["Nice"]) > 0


def test_central_units_read_their_own_env_and_order_after_migrations() -> None:
    for name in ("bf4ps-scheduler.service", "bf4ps-web.service", "bf4ps-bf4sw-sync.service"):
        unit = read_unit(name)
        assert "bf4ps-migrate.service" in unit.get("Unit", "After").split(), name
        assert "bf4ps-migrate.service" in unit.get("Unit", "Wants").split(), name
    for name in ("bf4ps-scheduler.service", "bf4ps-bf4sw-sync.service"):
        assert values(read_unit(name), "Service", "EnvironmentFile") == [
            "/etc/bf4ps/central.env"], name
    # the public website reads its own file only: never the scheduler's password
    web = values(read_unit("bf4ps-web.service"), "Service", "EnvironmentFile")
    assert web == ["/etc/bf4ps/web.env"]
    migrate = read_unit("bf4ps-migrate.service")
    assert migrate.get("Service", "RemainAfterExit") == "yes"
    assert exec_start_args(migrate, "migrate") == ["db", "upgrade"]
    # the schema owner's login only: never central.env's (the scheduler's) nor an optional file
    assert values(migrate, "Service", "EnvironmentFile") == ["/etc/bf4ps/migrate.env"]


# the secret each central unit reads, by the OS user it runs as (issue 44): a unit's process
# may read another's environment (/proc/PID/environ) only under the same user
SECRETS = {"bf4ps-web.service": "/etc/bf4ps/web.env",
           "bf4ps-scheduler.service": "/etc/bf4ps/central.env",
           "bf4ps-bf4sw-sync.service": "/etc/bf4ps/central.env",
           "bf4ps-migrate.service": "/etc/bf4ps/migrate.env"}


def test_each_central_unit_runs_as_its_own_os_user() -> None:
    """No two units that read different passwords share an OS user (nor its state folder);
    the env files are root's alone (0600: systemd reads them before dropping to the user)."""
    users: dict[str, set[str]] = {}
    for name, secret in SECRETS.items():
        service = read_unit(name)["Service"]
        user = service["User"]
        assert user != "bf4ps" and service["Group"] == user, name
        assert service["StateDirectory"] == user and f"/var/lib/{user}" in \
            service["ReadWritePaths"], name
        users.setdefault(user, set()).add(secret)
    assert all(len(secrets) == 1 for secrets in users.values()), users
    assert len(users) == 3, users  # web, scheduler (and its BF4SW sync), migrate
    for example in ("central", "web", "migrate"):
        text = (ENV_DIR / f"{example}.env.example").read_text()
        assert f"install -m 0600 -o root -g root {example}.env.example" in text, example


def test_target_is_wanted_by_multi_user() -> None:
    unit = configparser.RawConfigParser(strict=False)
    unit.read_string((SYSTEMD / "bf4ps.target").read_text())
    assert unit.get("Install", "WantedBy") == "multi-user.target"


def test_every_env_file_a_unit_reads_has_an_example() -> None:
    examples = {
        "/etc/bf4ps/central.env": "central.env.example",
        "/etc/bf4ps/web.env": "web.env.example",
        "/etc/bf4ps/migrate.env": "migrate.env.example",
        "/etc/bf4ps/collector-%i.env": "collector.env.example",
    }
    for name in SERVICES:
        for path in values(read_unit(name), "Service", "EnvironmentFile"):
            if path.startswith("-"):
                continue  # optional file
            assert path in examples, f"{name} reads {path}, which has no example"
            assert (ENV_DIR / examples[path]).exists()


# ---------------------------------------------------------------- env examples


def test_the_expected_env_examples_exist() -> None:
    assert set(ENV_EXAMPLES) == {"central.env.example", "web.env.example", "migrate.env.example",
                                 "collector.env.example", "collector-interactive.env.example"}


@pytest.mark.parametrize("name", ENV_EXAMPLES)
def test_env_example_names_real_settings(name: str) -> None:
    settings = {f"BF4PS_{field.upper()}" for field in Settings.model_fields}
    assigned, commented = parse_env(name)
    for var in set(assigned) | commented:
        if name.startswith("collector") and var in COLLECTOR_VARS:
            continue
        assert var in settings, f"{name}: {var} is not a BF4PS setting"


@pytest.mark.parametrize("name", ENV_EXAMPLES)
def test_env_example_values_are_accepted(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty or malformed value would stop the process at start (exit 1, restart loop)."""
    for var in list(os.environ):
        if var.startswith("BF4PS_"):
            monkeypatch.delenv(var)
    assigned, _ = parse_env(name)
    ours = {var: value for var, value in assigned.items() if var.startswith("BF4PS_")}
    assert ours, f"{name} sets no BF4PS_ variable"
    for var, value in ours.items():
        monkeypatch.setenv(var, value)
    Settings()  # raises on a bad value


@pytest.mark.parametrize("name", ["collector.env.example", "collector-interactive.env.example"])
def test_collector_env_examples_fill_the_units_command_line(name: str) -> None:
    assigned, _ = parse_env(name)
    assert set(assigned) >= COLLECTOR_VARS, name
    assert assigned["COLLECTOR_EGRESS"].strip(), name
    assert assigned["COLLECTOR_LANE"] in {lane.value for lane in Lane}, name
    assert "BF4PS_DATABASE_URL" in assigned, name
    expected_lane = "interactive" if "interactive" in name else "background"
    assert assigned["COLLECTOR_LANE"] == expected_lane
    # the extra arguments, live or shown as a commented example, are real options
    text = (ENV_DIR / name).read_text()
    for extra in re.findall(r"COLLECTOR_EXTRA_ARGS=(.+)", text):
        args = ["collector", "run", "--name", "x", "--egress", "y", *shlex.split(extra)]
        check_invocation(args, f"{name}: COLLECTOR_EXTRA_ARGS={extra}")


# ---------------------------------------------------------------- Grafana dashboard


def exposed_series() -> dict[str, set[str]]:
    """Series name -> label names, from the metric families defined in web/metrics*.py."""
    assert METRICS_PY.exists(), f"{METRICS_PY} moved: point the dashboard check at the metrics"
    suffixes = {
        "CounterMetricFamily": ("_total",), "Counter": ("_total", "_created"),
        "GaugeMetricFamily": ("",), "Gauge": ("",),
        "HistogramMetricFamily": ("_bucket", "_sum", "_count"),
        "Histogram": ("_bucket", "_sum", "_count", "_created"),
    }
    series: dict[str, set[str]] = {}
    for node in (n for f in METRICS_FILES for n in ast.walk(ast.parse(f.read_text()))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in suffixes and node.args
                and isinstance(node.args[0], ast.Constant)):
            continue
        labels: set[str] = set()
        label_node = next((k.value for k in node.keywords if k.arg == "labels"), None)
        if label_node is None and node.func.id in ("Counter", "Gauge", "Histogram") \
                and len(node.args) > 2:
            label_node = node.args[2]
        if isinstance(label_node, ast.Name):  # e.g. labels=labels
            label_node = _assigned_list(label_node.id)
        if isinstance(label_node, ast.List | ast.Tuple):
            labels = {e.value for e in label_node.elts if isinstance(e, ast.Constant)}
        base = str(node.args[0].value)
        for suffix in suffixes[node.func.id]:
            extra = {"le"} if suffix == "_bucket" else set()
            series[base + suffix] = labels | extra
    assert series, "no metric families found in web/metrics.py"
    return series


def _assigned_list(name: str) -> ast.expr | None:
    for node in (n for f in METRICS_FILES for n in ast.walk(ast.parse(f.read_text()))):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    return None


def dashboard_targets() -> list[tuple[str, str, str]]:
    """(panel title, expr, legendFormat) of every query."""
    data = json.loads(DASHBOARD.read_text())
    out = []
    for panel in data["panels"]:
        for target in panel.get("targets", []):
            out.append((panel["title"], target["expr"], target.get("legendFormat", "")))
    return out


def test_dashboard_is_an_importable_grafana_dashboard() -> None:
    data = json.loads(DASHBOARD.read_text())
    assert data["schemaVersion"] >= 36
    assert [i["name"] for i in data["__inputs"]] == ["DS_PROMETHEUS"]
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for panel in data["panels"]:
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}, panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
            assert panel["targets"], panel["title"]
    exprs = " ".join(expr for _, expr, _ in dashboard_targets())
    for needed in ("bf4ps_queue_jobs", "bf4ps_coverage_soldiers", "histogram_quantile",
                   "bf4ps_gate_wait_seconds_bucket", "bf4ps_egress_throttles_total",
                   "bf4ps_collector_healthy", "bf4ps_events_total"):
        assert needed in exprs, f"the dashboard has no panel using {needed}"


def test_dashboard_queries_only_exposed_metrics_and_labels() -> None:
    series = exposed_series()
    for title, expr, legend in dashboard_targets():
        used = set(re.findall(r"\bbf4ps_[a-z0-9_]+", expr))
        assert used, f"{title}: no bf4ps metric in {expr!r}"
        unknown = used - set(series) - PENDING_METRICS
        assert not unknown, f"{title}: not exposed by web/metrics.py: {sorted(unknown)}"
        allowed = set().union(*(series.get(name, PENDING_LABELS.get(name, set()))
                                for name in used)) | {"instance", "job"}
        grouped = re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr)
        labels = {label.strip() for group in grouped for label in group.split(",") if label.strip()}
        matchers = re.findall(r"\{([^}]*)\}", expr)
        labels |= {m for group in matchers for m in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", group)}
        labels |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
        assert labels <= allowed, f"{title}: unknown labels {sorted(labels - allowed)}"
        quantiles = re.findall(
            r"histogram_quantile\([^,]+,\s*sum by \(([^)]*)\)\s*\(rate\((\w+)", expr)
        assert len(quantiles) == expr.count("histogram_quantile("), f"{title}: {expr}"
        for by, name in quantiles:
            assert "le" in by.replace(" ", "").split(",") and name.endswith("_bucket"), title


# ---------------------------------------------------------------- container


def test_containerfile_is_multi_stage_non_root_one_image_for_all_roles() -> None:
    text = (CONTAINER / "Containerfile").read_text()
    stages = re.findall(r"^FROM\s+\S+(?:\s+AS\s+(\w+))?", text, re.M)
    assert len(stages) >= 2 and "builder" in stages and "runtime" in stages
    runtime = text.split("AS runtime", 1)[1]
    assert re.search(r"^USER\s+(?!root)\w+", runtime, re.M), "the runtime stage runs as root"
    assert 'ENTRYPOINT ["bf4ps"]' in runtime and 'CMD ["--help"]' in runtime
    assert "HEALTHCHECK" in runtime and "/healthz" in runtime
    assert "pip wheel" in text
    for copied in re.findall(r"^COPY\s+(?!--from)(.+?)\s+\S+$", text, re.M):
        for source in copied.split():
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"


def test_compose_file_describes_the_central_node() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    data = yaml.safe_load((CONTAINER / "compose.yaml").read_text())
    services = data["services"]
    assert {"postgres", "migrate", "scheduler", "web"} <= set(services)
    assert services["postgres"]["image"].startswith("postgres:17")
    assert any(v.endswith(":/var/lib/postgresql/data") for v in services["postgres"]["volumes"])
    assert services["migrate"]["command"] == ["db", "upgrade"]
    for name, svc in services.items():
        if svc.get("image", "").startswith("postgres:"):
            continue  # the server, and the `logins` step (psql in the server's image)
        build = svc["build"]
        assert (CONTAINER / build["context"] / build["dockerfile"]).resolve() == \
            (CONTAINER / "Containerfile").resolve(), name
        check_invocation([str(a) for a in svc["command"]], f"compose service {name}")
        if name != "migrate":
            assert svc["depends_on"]["migrate"]["condition"] == \
                "service_completed_successfully", name
    collectors = [n for n, s in services.items()
                  if s.get("command", [])[:2] == ["collector", "run"]]
    assert collectors == ["collector-interactive"], "background collectors belong on BF4SW hosts"
    interactive = services["collector-interactive"]
    assert "interactive" in interactive["command"]
    assert interactive.get("hostname"), "a collector's host name must survive re-creation"
    assert interactive["restart"] == "on-failure"


def test_compose_file_is_least_privilege() -> None:
    """No bf4ps service connects as the image's superuser or shares a login with another
    kind; every connection uses TLS, and the published server refuses connections without it.
    (tests/system/test_deploy_fleet.py runs the fleet with these URLs.)"""
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    services = yaml.safe_load((CONTAINER / "compose.yaml").read_text())["services"]
    users = {}
    for name, svc in services.items():
        url = svc.get("environment", {}).get("BF4PS_DATABASE_URL")
        if url is None:
            continue
        m = re.match(r"postgresql://(\w+):", url)
        assert m and m[1] != "postgres", (name, url)
        # the server's certificate checked, inside the host's network too (issue 44)
        assert "sslmode=verify-full&sslrootcert=/etc/bf4ps/db-ca.crt" in url, (name, url)
        assert "./tls/ca.crt:/etc/bf4ps/db-ca.crt:ro" in svc["volumes"], name
        users[name] = m[1]
    assert users["migrate"] == "bf4ps" and users["web"] != users["scheduler"], users
    assert len(set(users.values())) == len(users), users
    assert services["postgres"]["environment"]["POSTGRES_USER"] == "postgres"
    assert "ssl=on" in services["postgres"]["command"]
    hba = [line.split() for line in (CONTAINER / "pg_hba.conf").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    assert hba[-1] == ["host", "all", "all", "all", "reject"]  # TCP without TLS: refused
    assert all(rule[0] in ("local", "hostssl") for rule in hba[:-1]), hba
    assert not any("trust" in rule for rule in hba), hba
    for name in ("scheduler", "web", "collector-interactive"):
        assert services[name]["depends_on"]["logins"]["condition"] == \
            "service_completed_successfully", name
    assert services["logins"]["environment"]["PGSSLMODE"] == "verify-full"
    # every container drops its capabilities and may gain none; the server keeps the few its
    # entrypoint needs (its data directory's owner, then its own user)
    for name, svc in services.items():
        assert svc["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in svc["security_opt"], name
        allowed = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"}
        assert set(svc.get("cap_add", [])) <= (allowed if name == "postgres" else set()), name


# ---------------------------------------------------------------- the operations guide


def guide_commands() -> list[str]:
    lines = []
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", OPERATIONS.read_text(), re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith(("bf4ps ", "/opt/bf4ps/.venv/bin/bf4ps ")):
                lines.append(line)
    return lines


def test_every_bf4ps_command_in_the_operations_guide_parses() -> None:
    commands = guide_commands()
    assert len(commands) > 20
    for line in commands:
        args = shlex.split(line)[1:]
        cmd = check_invocation(args, f"docs/operations.md: {line}")
        # choices (resource, platform, lane) and types must be accepted too
        ctx = cmd.make_context(cmd.name or "", split_command(args)[1], resilient_parsing=False)
        assert ctx.params is not None, line
