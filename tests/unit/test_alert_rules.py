"""The alert rules (deploy/prometheus/) under promtool: the rule file checks, every alert has
its own unit-test group that shows it firing and silent, the rules use only metrics the website
exposes, and the Grafana dashboard shows every figure an alert watches."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_deploy_files import (
    DEPLOY,
    PENDING_LABELS,
    PENDING_METRICS,
    dashboard_targets,
    exposed_series,
)

RULES = DEPLOY / "prometheus" / "bf4ps-alerts.yml"
RULE_TESTS = DEPLOY / "prometheus" / "bf4ps-alerts.test.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool missing (Debian package prometheus; CI installs it)")


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def alerts() -> list[dict[str, Any]]:
    return [rule for group in _load(RULES)["groups"] for rule in group["rules"]
            if "alert" in rule]


def _promtool(*args: str) -> str:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120,
                          cwd=RULES.parent)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    return out


@needs_promtool
def test_promtool_checks_the_rule_file() -> None:
    assert f"SUCCESS: {len(alerts())} rules found" in _promtool("check", "rules", RULES.name)


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    assert "SUCCESS" in _promtool("test", "rules", RULE_TESTS.name)


def test_every_alert_has_a_test_that_shows_it_firing_and_silent() -> None:
    groups = _load(RULE_TESTS)["tests"]
    for rule in alerts():
        name = rule["alert"]
        cases = [case for group in groups if group["name"].split()[0] == name
                 for case in group["alert_rule_test"]]
        assert any(c["name"] == name for c in groups), f"no test group named {name}"
        assert all(c["alertname"] == name for c in cases), name
        assert any(c["exp_alerts"] for c in cases), f"{name}: never shown firing"
        assert any(not c["exp_alerts"] for c in cases), f"{name}: never shown silent"
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def _metrics_of(expr: str) -> set[str]:
    return set(re.findall(r"\bbf4ps_[a-z0-9_]+", expr))


def test_rules_use_only_exposed_metrics_and_labels() -> None:
    series = exposed_series()
    for rule in alerts():
        expr = str(rule["expr"])
        used = _metrics_of(expr)
        assert used or "up{" in expr, rule["alert"]
        unknown = used - set(series) - PENDING_METRICS
        assert not unknown, f"{rule['alert']}: not exposed by web/metrics.py: {sorted(unknown)}"
        allowed = set().union(*(series.get(n, PENDING_LABELS.get(n, set())) for n in used))
        grouped = re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", expr)
        labels = {part.strip() for g in grouped for part in g.split(",") if part.strip()}
        labels |= {m for g in re.findall(r"\{([^}]*)\}", expr)
                   for m in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", g)}
        if used:
            assert labels <= allowed | {"job", "instance"}, (rule["alert"], labels - allowed)
        templated = set(re.findall(r"\$labels\.(\w+)", str(rule["annotations"])))
        assert templated <= labels | {"instance", "job"}, (rule["alert"], templated - labels)


def test_the_dashboard_shows_every_figure_an_alert_watches() -> None:
    on_dashboard = set().union(*(_metrics_of(expr) for _, expr, _ in dashboard_targets()))
    for rule in alerts():
        missing = _metrics_of(str(rule["expr"])) - on_dashboard
        assert not missing, f"{rule['alert']}: no dashboard panel shows {sorted(missing)}"


def test_the_operations_guide_explains_every_alert() -> None:
    guide = (DEPLOY.parent / "docs" / "operations.md").read_text()
    for rule in alerts():
        assert f"`{rule['alert']}`" in guide, f"docs/operations.md does not explain {rule['alert']}"


def test_the_clock_skew_threshold_is_the_one_the_docs_name() -> None:
    guide = (DEPLOY.parent / "docs" / "operations.md").read_text()
    rule = next(r for r in alerts() if r["alert"] == "BF4PSClockSkew")
    threshold = re.search(r"\)\) > ([0-9.]+)$", str(rule["expr"]).strip())
    assert threshold, rule["expr"]
    named = set(re.findall(r"`abs\(bf4ps_collector_clock_offset_seconds\) > ([0-9.]+)`", guide))
    named |= set(re.findall(r"clock is more than ([0-9.]+) s off the database's", guide))
    assert named == {threshold.group(1)}, (named, threshold.group(1))


def test_absent_guards_cover_the_series_a_fresh_database_lacks() -> None:
    """Each alert on a series that /metrics leaves out until something exists (no collector,
    no intake pass, no scrape job) has an absent() guard on that series."""
    exprs = " ".join(str(r["expr"]) for r in alerts())
    for series in ("up{job=\"bf4ps\"}", "bf4ps_collector_healthy",
                   "bf4ps_intake_success_age_seconds{source=\"bf4sw\"}"):
        assert f"absent({series})" in exprs, series
