"""The database's code reads the policy's bounds itself (`bf4ps_policy_number(key, default)`,
db/functions/): each key it reads is a key of bf4ps.policy.Policy, and the default written in
the SQL is the Policy's default, so a database with no override bounds a caller exactly as the
documented policy does."""

from __future__ import annotations

import re

import pytest

from bf4ps.db.code import available
from bf4ps.policy import Policy

READ = re.compile(r"bf4ps_policy_number\('([a-z_]+)',\s*([0-9.]+)\)")


def reads() -> list[tuple[str, str, float]]:
    return [(f.name, key, float(default)) for f in available()
            for key, default in READ.findall(f.text)]


def test_the_code_reads_policy_bounds() -> None:
    keys = {key for _, key, _ in reads()}
    # the bounds issue 44 moved into the database: hold, cool-down, seed floor, retention
    assert {"circuit_hold_seconds", "gate_cooldown_max_seconds",
            "gate_seed_min_interval_seconds", "event_retention_days"} <= keys, keys


@pytest.mark.parametrize(("file", "key", "default"), reads())
def test_each_default_in_the_sql_is_the_policys(file: str, key: str, default: float) -> None:
    assert key in Policy.model_fields, f"{file}: {key} is no policy key"
    assert float(getattr(Policy(), key)) == default, f"{file}: {key} defaults to {default}"
