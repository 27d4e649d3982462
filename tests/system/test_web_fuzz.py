"""Schemathesis against the generated /openapi.json of a live server (uvicorn, real PostgreSQL):
positive and negative inputs for every operation, authenticated as an operator. Every answer
must be one the document lists for the operation (status code), of its content type, and match
its schema; none may be a 5xx. Bounded (a few dozen examples per operation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

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


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def _fuzz(operation: Any, mode: GenerationMode, outcomes: dict[int, int],
          failures: list[str]) -> None:
    auth = OPS if operation.path.startswith("/api/ops") else None

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        response = case.call(auth=auth, timeout=10)
        outcomes[response.status_code] = outcomes.get(response.status_code, 0) + 1
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception as exc:  # every check's failure, kept to report them all at once
            failures.append(f"{mode.value} {case.method} {case.formatted_path} "
                            f"query={case.query} body={case.body!r:.200} -> "
                            f"{response.status_code} {response.text[:200]}: {exc!s:.500}")

    try:
        run()
    except Unsatisfiable:  # nothing to negate (an operation without parameters)
        assert mode is GenerationMode.NEGATIVE, operation.label


def test_every_answer_conforms_to_the_document(api_schema: Any) -> None:
    operations = _operations(api_schema)
    assert len(operations) >= 19
    outcomes: dict[int, int] = {}
    failures: list[str] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(operation, mode, outcomes, failures)
    print("fuzz outcomes:", sorted(outcomes.items()))
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:30])
    assert not [code for code in outcomes if code >= 500], outcomes
    assert sum(outcomes.values()) > 300
    assert any(200 <= code < 300 for code in outcomes) and 422 in outcomes
