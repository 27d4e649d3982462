"""The simulated world's identities, shared by the Battlelog and BF4SW simulators.

Any persona id is a soldier in the simulated Battlelog. A name maps to a persona id per platform
deterministically, so the BF4SW simulator's population and the Battlelog simulator's search agree.
"""

from __future__ import annotations

import hashlib

from bf4ps.domain import Platform

PERSONA_BASE = 1_000_000_000  # real persona ids run from ~1e8 to beyond 2**32


def _digest(*parts: str) -> int:
    raw = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big")


def persona_id_for(name: str, platform: Platform) -> int:
    """Stable persona id of `name` on `platform` (between 1e9 and ~1.1e12: beyond 32 bits)."""
    return PERSONA_BASE + _digest(name.casefold(), platform.value) % 1_099_000_000_000


def persona_seed(persona_id: int) -> int:
    """A stable seed for everything the simulator derives from one persona."""
    return _digest("persona", str(persona_id))
