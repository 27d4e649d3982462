"""The read side's models spell the job kinds as Literal types (so the generated API schema lists
them inline); they must be exactly bf4ps.domain's JobKind."""

from __future__ import annotations

from typing import get_args

import pytest

from bf4ps.domain import JobKind
from bf4ps.views.events import EventResource
from bf4ps.views.request_status import Step


@pytest.mark.parametrize("spelling", [Step, EventResource], ids=["Step", "EventResource"])
def test_literal_job_kinds_are_the_domains(spelling: object) -> None:
    assert sorted(get_args(spelling)) == sorted(kind.value for kind in JobKind)
