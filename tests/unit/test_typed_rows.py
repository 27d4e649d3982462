"""Typed rows at the database boundary (bf4ps.db.queries.as_row): a dataclass filled from a
dict row by field name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bf4ps.db.queries import as_row


@dataclass(frozen=True)
class Pair:
    a: int
    b: str | None


def test_fields_come_from_the_columns_of_their_names() -> None:
    assert as_row(Pair, {"b": "x", "a": 1}) == Pair(1, "x")


def test_a_column_the_type_does_not_name_is_left_out() -> None:
    """A migration that adds a column breaks no reader of the row."""
    assert as_row(Pair, {"a": 1, "b": None, "added_later": True}) == Pair(1, None)


def test_a_missing_column_is_an_error_naming_it() -> None:
    with pytest.raises(KeyError, match="b"):
        as_row(Pair, {"a": 1})
