"""Whom a player asks BF4PS to collect: a name on a platform, or a persona id on a platform
(with the name to register it under when it is not known here). Parsed once, from a form, a
JSON body or the CLI's argument, before anything reaches SQL; a Battlelog soldier URL (in its
own field or typed where a name goes) is a persona id with the URL's name."""

from __future__ import annotations

from dataclasses import dataclass

from bf4ps.domain import Platform
from bf4ps.interactive.inputs import (
    InputError,
    looks_like_url,
    parse_name,
    parse_persona_id,
    parse_platform,
    parse_soldier_url,
)


@dataclass(frozen=True, slots=True)
class ByName:
    """A soldier named by its current or a former name; unknown names become a look-up."""

    platform: Platform
    name: str


@dataclass(frozen=True, slots=True)
class ByPersona:
    """A soldier named by persona id; `name` registers a persona not known here."""

    platform: Platform
    persona_id: int
    name: str | None = None


Target = ByName | ByPersona


def parse_target(*, name: object = None, platform: object = None, persona_id: object = None,
                 url: object = None) -> Target:
    """The target of a submission's fields: a Battlelog URL (in `url`, or typed into the name
    box; its platform wins), else name and/or persona id with a platform. Raises InputError
    naming the field at fault."""
    if url is None and isinstance(name, str) and looks_like_url(name):
        url, name = name, None
    if url is not None:
        if not isinstance(url, str):
            raise InputError("url", "url must be text")
        ref = parse_soldier_url(url)
        return ByPersona(ref.platform, ref.persona_id, ref.name)
    if platform is None:
        raise InputError("platform", "platform is required: one of " + ", ".join(Platform))
    plat = parse_platform(platform)
    clean_name = parse_name(name) if name is not None else None
    if persona_id is not None:
        return ByPersona(plat, parse_persona_id(persona_id), clean_name)
    if clean_name is None:
        raise InputError("name", "a soldier name or persona id is required")
    return ByName(plat, clean_name)
