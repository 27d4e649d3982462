"""Schemathesis against /openapi.json of a live server (uvicorn, real PostgreSQL): positive and
negative inputs for every operation, authenticated as an operator; no answer may be a 5xx.
Bounded (a few dozen examples per operation) so it runs well under a minute."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from bf4ps.db.connect import connection
from bf4ps.settings import Settings
from bf4ps.web.app import create_app
from bf4ps.web.serve import serve_in_thread
from tests.helpers import make_soldier

pytestmark = pytest.mark.slow

OPS = ("operator", "fuzz-pass")
MAX_EXAMPLES = 60


@pytest.fixture
def web_base(db_url: str) -> Iterator[str]:
    settings = Settings(database_url=db_url, ops_username=OPS[0],  # type: ignore[arg-type]
                        ops_password=OPS[1], secret_key="fuzz")
    with serve_in_thread(create_app(settings)) as base:
        yield base


@pytest.fixture
async def seeded(db_url: str) -> None:
    async with connection(db_url) as conn:
        for pid in (1, 2, 1003662931478):
            await make_soldier(conn, pid, name=f"Fuzz{pid}")


@pytest.fixture
def api_schema(web_base: str, seeded: None) -> Any:
    return schemathesis.openapi.from_url(f"{web_base}/openapi.json")


def _operations(schema: Any) -> list[Any]:
    return [result.ok() for result in schema.get_all_operations()]


def _fuzz(operation: Any, mode: GenerationMode, outcomes: dict[int, int]) -> None:
    auth = OPS if operation.path.startswith("/api/ops") else None

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        response = case.call(auth=auth, timeout=10)
        outcomes[response.status_code] = outcomes.get(response.status_code, 0) + 1
        assert response.status_code < 500, (case.method, case.formatted_path, case.query,
                                            case.body, response.status_code,
                                            response.text[:300])

    try:
        run()
    except Unsatisfiable:  # nothing to negate (an operation without parameters)
        assert mode is GenerationMode.NEGATIVE, operation.label


def test_no_server_errors(api_schema: Any) -> None:
    operations = _operations(api_schema)
    assert len(operations) >= 17
    outcomes: dict[int, int] = {}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(operation, mode, outcomes)
    print("fuzz outcomes:", sorted(outcomes.items()))
    assert not [code for code in outcomes if code >= 500], outcomes
    assert sum(outcomes.values()) > 300
    assert any(200 <= code < 300 for code in outcomes) and 422 in outcomes
