"""Where a database function reads the scheduling policy itself (bf4ps_policy_number(key,
default) in db/functions/), its default is the policy model's: a key changed in one place and
not the other fails here."""

from __future__ import annotations

import re

from bf4ps.db import code
from bf4ps.policy import Policy

READ = re.compile(r"bf4ps_policy_number\('([a-z0-9_]+)',\s*([0-9.]+)\)")


def test_every_default_the_database_reads_is_the_policy_s() -> None:
    found = [(f.name, key, float(default)) for f in code.available()
             for key, default in READ.findall(f.text)]
    assert len(found) >= 5  # the bounds the role API reads: a check that sees them
    defaults = Policy().model_dump()
    wrong = [(name, key, default, defaults.get(key)) for name, key, default in found
             if key not in defaults or float(defaults[key]) != default]
    assert wrong == []
