"""The multi-host test bed (its namespaces, PostgreSQL and simulator hosts), built once for the
tier: every module's tests share one worker (`xdist_group("netns")`) and so one bed, each test
with a fresh migrated database and its own collectors (stopped after it); tests read the
simulator's counters as deltas. Skipped, saying why, only where namespaces cannot be made."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from bf4ps.db import migrate
from bf4ps.db.connect import ensure_database
from tests.netns import net
from tests.netns.bed import Bed

HOSTS = 3


@pytest.fixture(scope="session")
def bed() -> Iterator[Bed]:
    why = net.available()
    if why is not None:
        pytest.skip(f"multi-host tests: {why}")
    net.sweep_stale()
    made = Bed(HOSTS).open()
    try:
        made.start_sim(speed=20, min_interval=1.0, penalty=1)
        yield made
    finally:
        made.close()


@pytest.fixture
async def netdb(bed: Bed) -> AsyncIterator[str]:
    """A fresh migrated database on the bed's server; its name."""
    name = f"nt_{uuid.uuid4().hex[:10]}"
    await ensure_database(bed.observer_url("postgres"), name)
    await migrate.upgrade(bed.observer_url(name))
    try:
        yield name
    finally:
        bed.stop_collectors()
