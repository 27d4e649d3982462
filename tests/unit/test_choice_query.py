"""A query parameter that must be one of an enumeration's values (the leaderboards' `by`)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from bf4ps.stats.discovery import Board
from bf4ps.views.gains_board import GainsBoardKind
from bf4ps.web.errors import WebError
from bf4ps.web.params import choice_query


def _request(query: str) -> Request:
    return Request({"type": "http", "query_string": query.encode(), "headers": []})


def test_absent_is_the_default_and_a_value_is_its_member() -> None:
    assert choice_query(_request(""), "by", Board, Board.SPM) is Board.SPM
    assert choice_query(_request("by=kd"), "by", Board, Board.SPM) is Board.KD
    assert choice_query(_request("by=weapon"), "by", GainsBoardKind,
                        GainsBoardKind.KPM) is GainsBoardKind.WEAPON


def test_another_value_is_refused_naming_every_choice() -> None:
    with pytest.raises(WebError) as got:
        choice_query(_request("by=elo"), "by", Board, Board.SPM)
    assert got.value.status == 422
    assert str(got.value) == "parameter 'by' must be one of: spm, kd, skill, kills"
    with pytest.raises(WebError, match="longer than 10 characters"):
        choice_query(_request("by=" + "k" * 11), "by", Board, Board.SPM)
