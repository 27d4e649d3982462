"""The run-time policy in the database: set values are validated with a one-line reason; a
stored value a newer version refuses falls back to its default instead of stopping every
process that loads the policy."""

from __future__ import annotations

import json

import pytest

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.policy import Policy, PolicyError


async def test_a_bad_value_is_refused_with_one_line(conn: Conn) -> None:
    with pytest.raises(PolicyError) as exc:
        await policy_mod.set_value(conn, "share_active", "abc", by="test")
    assert str(exc.value) == ("share_active: Input should be a valid number, unable to parse "
                              "string as a number (got 'abc')")
    with pytest.raises(PolicyError, match="event_retention_days: Input should be greater"):
        await policy_mod.set_value(conn, "event_retention_days", "0.5", by="test")
    assert await policy_mod.load(conn) == Policy()  # nothing was stored


async def test_a_stored_value_now_refused_falls_back_to_its_default(
        conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    await policy_mod.set_value(conn, "working_set_background", "321", by="test")
    # stored by an older version whose rule was looser (event_retention_days was only > 0)
    await conn.execute(q("policy_set"), {"key": "event_retention_days",
                                         "value": json.dumps(0.5), "by": "old"})
    with caplog.at_level("WARNING", logger="bf4ps.policy"):
        pol = await policy_mod.load(conn)
        assert await policy_mod.load(conn) == pol  # loaded every tick: warned once
    assert len(caplog.records) == 1
    assert pol.event_retention_days == Policy().event_retention_days
    assert pol.working_set_background == 321  # the valid override is kept
    assert "event_retention_days: Input should be greater than or equal to 1 (got 0.5)" in (
        caplog.text)
