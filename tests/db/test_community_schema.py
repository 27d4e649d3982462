"""The real bf4stats capture (../shared/reference/samples/, read where it lies: it is not ours
to copy into the repository; absent, the test skips naming the folder) as a schema: BF4PS's
playerInfo has every key path the capture has, values aside, except the
deliberate omissions docs/api.md lists (and each listed omission is really missing)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps.db.connect import Conn
from tests.db.community import community_client
from tests.db.test_web_api import seed_soldier

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT.parent / "shared" / "reference" / "samples"
CAPTURE = SAMPLES / "bf4stats-playerInfo-xone.json"
DOCS = ROOT / "docs" / "api.md"


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value; a list's items under `[]`."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found |= {path} | key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            found |= key_paths(item, prefix + "[]")
    return found


def documented_omissions() -> list[str]:
    """The key paths docs/api.md lists between its omission markers."""
    text = DOCS.read_text()
    block = re.search(r"<!-- playerInfo omissions -->(.*?)<!-- end -->", text, re.S)
    assert block, "docs/api.md lists no playerInfo omissions"
    return re.findall(r"^- `([^`]+)`", block[1], re.M)


def capture() -> Any:
    if not CAPTURE.exists():
        pytest.skip(f"the real bf4stats capture is not here: {SAMPLES} (the project's shared "
                    "reference samples, beside the repository)")
    return json.loads(CAPTURE.read_bytes())


@pytest.fixture
async def client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with community_client(db_url) as c:
        yield c


async def test_player_info_has_every_key_path_of_the_real_capture(
        client: httpx.AsyncClient, conn: Conn) -> None:
    real = capture()
    await seed_soldier(conn)
    paths = key_paths(real)
    assert len(paths) > 400 and "stats.extra.kdr" in paths
    answer = await client.get("/community/bf4stats/api/playerInfo?plat=pc&name=TheOnlyBond")
    assert answer.status_code == 200, answer.text
    ours = key_paths(answer.json())
    missing = paths - ours
    omitted = documented_omissions()
    undocumented = sorted(p for p in missing
                          if not any(p == o or p.startswith(o) for o in omitted))
    assert undocumented == [], undocumented
    stale = [o for o in omitted if not any(p == o or p.startswith(o) for p in missing)]
    assert stale == [], f"listed as omitted in docs/api.md but present: {stale}"
    assert set(real) == set(answer.json())  # the sections
