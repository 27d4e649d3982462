"""The rooms of the database's code (src/bf4ps/db/functions/ROOM.sql) and which may call which:
the import contracts' rule, for SQL. A function calls another when its text names it followed
by `(`; a call into a room not listed for the caller's room is a breach."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bf4ps.db import code

# room -> the rooms its functions may call (its own always, and every room the access room: who
# the caller is, the policy's numbers). The admission sits above the queue and the budget: a
# success that continues behind a gate goes through the admission (admission_succeed), which
# calls the queue; the queue never calls the admission or a gate. The queue's claim asks the
# circuit which held work it may not take (bf4ps_circuit_lets). The gates and the ledger ask the
# registry whose registration and egress the caller acts for.
BASE = frozenset({"access"})
MAY_CALL: dict[str, frozenset[str]] = {
    "access": frozenset(),
    "admission": BASE | {"budget", "queue"},
    "budget": BASE,
    "circuit": BASE,
    "coverage": BASE,
    "events": BASE,
    "feeder": BASE,
    "fleet": BASE,
    "gates": BASE | {"fleet"},
    "history": BASE,
    "ledger": BASE | {"restore", "fleet"},
    "progress": BASE,
    "queue": BASE | {"circuit"},
    "requests": BASE,
    "restore": BASE | {"ledger"},
    "sessions": BASE,
    "settings": BASE,
    "soldiers": BASE,
    "state": BASE,
    "stats": BASE,
}
_DEFINED = re.compile(r"^CREATE OR REPLACE FUNCTION ([a-z0-9_]+)\(", re.MULTILINE)
_OBJECT = re.compile(r"^(?=CREATE OR REPLACE )", re.MULTILINE)


@dataclass(frozen=True)
class Call:
    room: str
    caller: str  # the function (or view, trigger) whose text makes the call
    callee: str
    callee_room: str

    def __str__(self) -> str:
        return (f"{self.room}.sql: {self.caller} calls {self.callee} of {self.callee_room}.sql, "
                f"which {self.room}.sql may not call")


def rooms(files: Iterable[code.CodeFile]) -> dict[str, str]:
    return {f.name.removesuffix(".sql"): f.text for f in files}


def calls(texts: dict[str, str]) -> list[Call]:
    """Every call from one room's object into another room's function."""
    home = {name: room for room, text in texts.items() for name in _DEFINED.findall(text)}
    callee = re.compile(r"\b(" + "|".join(sorted(home, key=len, reverse=True)) + r")\s*\(")
    found = []
    for room, text in texts.items():
        for part in _OBJECT.split(text):
            head = re.match(r"CREATE OR REPLACE \w+ ([a-z0-9_]+)", part)
            if head is None:
                continue
            found += [Call(room, head[1], name, home[name])
                      for name in sorted(set(callee.findall(part))) if home[name] != room]
    return found


def breaches(texts: dict[str, str]) -> list[Call]:
    return [c for c in calls(texts) if c.callee_room not in MAY_CALL.get(c.room, frozenset())]
