"""The input fields of the read side's request models: one name rule, one platform vocabulary,
persona ids and Battlelog URLs, checked by the same functions as the website's forms and the CLI
(interactive/inputs.py, whose messages they carry) and described in the OpenAPI document by
the same bounds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, Strict, WithJsonSchema

from bf4ps.domain import Platform
from bf4ps.interactive.inputs import (
    NAME_MAX,
    NAME_PATTERN,
    PERSONA_MAX,
    URL_MAX,
    parse_name,
    parse_platform,
)

COLLECTOR_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"


def _text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL character")
    return value


def _year(when: datetime) -> datetime:
    if not 2000 <= when.year <= 2100:
        raise ValueError("must be a time between the years 2000 and 2100")
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


SoldierName = Annotated[str, Strict(), AfterValidator(parse_name), WithJsonSchema({
    "type": "string", "minLength": 1, "maxLength": NAME_MAX, "pattern": NAME_PATTERN,
    "description": "A soldier name: letters, digits, '_', '-', '.', single inner spaces"})]
PlatformName = Annotated[Platform, BeforeValidator(parse_platform)]
PersonaId = Annotated[int, Strict(), Field(ge=1, le=PERSONA_MAX)]
BattlelogUrl = Annotated[str, Strict(), Field(max_length=URL_MAX), AfterValidator(_text),
                         WithJsonSchema({
                             "type": "string", "maxLength": URL_MAX,
                             "description": "https://battlelog.battlefield.com/bf4/soldier/"
                                            "NAME/stats/PERSONAID/pc/"})]
CollectorName = Annotated[str, Field(pattern=COLLECTOR_PATTERN, max_length=63)]
EgressKey = Annotated[str, Strict(), Field(min_length=1, max_length=100),
                      AfterValidator(_text)]  # an egress key as the collectors gave it
Reason = Annotated[str, Strict(), Field(max_length=200), AfterValidator(_text)]
Moment = Annotated[datetime, AfterValidator(_year)]
PersonaParam = Annotated[int, Field(ge=1, le=PERSONA_MAX)]  # a path or query parameter (text)
