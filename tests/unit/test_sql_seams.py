"""The seams of the database's code hold: each room's functions call only the rooms it may
(tests/schema/seams.py), as the import contracts hold the Python packages."""

from __future__ import annotations

from bf4ps.db import code
from tests.schema import seams


def test_every_room_is_ruled_and_every_call_allowed() -> None:
    texts = seams.rooms(code.available())
    assert set(texts) == set(seams.MAY_CALL), "a room without a rule, or a rule without a room"
    assert [str(b) for b in seams.breaches(texts)] == []
    # the checker sees the calls there are (a checker that finds none proves nothing)
    found = {(c.caller, c.callee) for c in seams.calls(texts)}
    assert {("admission_succeed", "queue_succeed"), ("admission_claim_next", "queue_claim"),
            ("queue_claim", "bf4ps_circuit_lets")} <= found


def test_a_planted_call_from_the_queue_into_a_gate_fails() -> None:
    texts = seams.rooms(code.available())
    planted = texts["queue"].replace(
        "BEGIN\n", "BEGIN\n    PERFORM bf4ps_gate_cool('eg', 1, 'planted');\n", 1)
    assert planted != texts["queue"]
    found = seams.breaches(texts | {"queue": planted})
    assert [(b.room, b.callee, b.callee_room) for b in found] == [
        ("queue", "bf4ps_gate_cool", "gates")]
    # and into the admission, the seam's other side
    planted = texts["queue"].replace(
        "BEGIN\n", "BEGIN\n    PERFORM admission_look(NULL, 0, 0, 0);\n", 1)
    assert [b.callee_room for b in seams.breaches(texts | {"queue": planted})] == ["admission"]
