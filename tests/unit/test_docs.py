"""Documents that are generated from code must match it."""

from __future__ import annotations

from pathlib import Path

from bf4ps.cli import confdoc
from bf4ps.policy import Policy

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def test_configuration_reference_matches_the_settings_and_policy() -> None:
    assert (DOCS / "configuration.md").read_text() == confdoc.render(), (
        "docs/configuration.md is stale: python -m bf4ps.cli.confdoc > docs/configuration.md")


def test_every_policy_key_is_explained() -> None:
    assert set(confdoc.POLICY_HELP) == set(Policy.model_fields)
