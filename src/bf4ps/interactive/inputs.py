"""What a player may type: soldier names, platforms, persona ids and Battlelog soldier URLs.

Everything is checked here before it reaches SQL or the queue; each refusal is an InputError
naming the field and saying what is wrong, so the website can answer 4xx with a clear message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from bf4ps.domain import Platform

# Origin ids, PSN ids and Xbox gamertags: letters, digits, '_', '-', '.', single inner spaces
# (gamertags). Lenient on purpose, but bounded. The one name rule: the website, the API (its
# OpenAPI document carries NAME_PATTERN), the CLI and the event-log search all use it.
NAME_MAX = 32
NAME_PATTERN = r"^[A-Za-z0-9_.\-]+(?: [A-Za-z0-9_.\-]+)*$"
NAME_WORDS = "soldier names use letters, digits, '_', '-', '.' and single inner spaces only"
_NAME = re.compile(NAME_PATTERN)
PERSONA_MAX = 2**63 - 1
BATTLELOG_HOSTS = frozenset({"battlelog.battlefield.com", "www.battlelog.battlefield.com"})
# /bf4/[locale/]soldier/NAME/stats/PERSONAID/PLATFORM[/]
_SOLDIER_PATH = re.compile(
    r"^/bf4/(?:[a-z]{2}/)?soldier/(?P<name>[^/]{1,96})/stats/(?P<pid>[0-9]{1,19})"
    r"/(?P<platform>[A-Za-z0-9]{2,10})/?$")
# Battlelog's own URL words for a platform (its soldier URLs say .../xbox/ for the Xbox 360);
# accepted in Battlelog URLs only: everywhere else a platform is one of Platform's values.
URL_PLATFORMS = {"xbox": Platform.XBOX360, "xone": Platform.XBOXONE, "xb1": Platform.XBOXONE,
                 "x360": Platform.XBOX360}
PLATFORM_WORDS = "use one of " + ", ".join(Platform)
URL_MAX = 300


class InputError(ValueError):
    """A value a player supplied that BF4PS refuses; `field` says which one."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class SoldierRef:
    """A soldier named by a Battlelog URL: persona id, platform and the name in the URL."""

    persona_id: int
    platform: Platform
    name: str | None


def parse_platform(value: object, field: str = "platform") -> Platform:
    """One of Platform's values, exactly (surrounding spaces aside)."""
    if isinstance(value, Platform):
        return value
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(field, "platform is required: one of " + ", ".join(Platform))
    if not isinstance(value, str):
        raise InputError(field, "platform must be text: " + PLATFORM_WORDS)
    try:
        return Platform(value.strip())
    except ValueError:
        raise InputError(field, "unknown platform; " + PLATFORM_WORDS) from None


def _url_platform(text: str, field: str) -> Platform:
    """A Battlelog URL's platform segment: Battlelog's words (any case) or Platform's."""
    word = text.lower()
    return URL_PLATFORMS.get(word) or parse_platform(word, field)


def parse_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str):
        raise InputError(field, "soldier name must be text")
    text = value.strip()
    if not text:
        raise InputError(field, "soldier name is required")
    if len(text) > NAME_MAX:
        raise InputError(field, f"soldier name is longer than {NAME_MAX} characters")
    if not _NAME.fullmatch(text):
        raise InputError(field, NAME_WORDS)
    return text


def parse_persona_id(value: object, field: str = "persona_id") -> int:
    if isinstance(value, bool):
        raise InputError(field, "persona id must be a positive integer")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) <= 19:
        number = int(value.strip())
    else:
        raise InputError(field, "persona id must be a positive integer")
    if not 0 < number <= PERSONA_MAX:
        raise InputError(field, "persona id must be between 1 and 2^63-1")
    return number


def looks_like_url(text: str) -> bool:
    return text.strip().lower().startswith(("http://", "https://", "battlelog."))


def parse_soldier_url(value: str, field: str = "url") -> SoldierRef:
    """https://battlelog.battlefield.com/bf4/soldier/NAME/stats/PERSONAID/pc/ (strictly)."""
    text = value.strip()
    if len(text) > URL_MAX:
        raise InputError(field, f"URL is longer than {URL_MAX} characters")
    if text.lower().startswith("battlelog."):
        text = "https://" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
        port = parts.port  # raises on a port that is not a number in 0-65535
    except ValueError:
        raise InputError(field, "not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or host not in BATTLELOG_HOSTS \
            or port is not None or parts.username or parts.password:
        raise InputError(field, "only battlelog.battlefield.com soldier URLs are accepted")
    match = _SOLDIER_PATH.match(parts.path)
    if match is None:
        raise InputError(field, "expected a BF4 soldier URL like https://battlelog.battlefield"
                                ".com/bf4/soldier/NAME/stats/PERSONAID/pc/")
    try:
        name: str | None = unquote(match["name"], errors="strict")
    except UnicodeDecodeError:
        name = None
    return SoldierRef(parse_persona_id(match["pid"], field),
                      _url_platform(match["platform"], field), _url_name(name))


def _url_name(name: str | None) -> str | None:
    """The URL's name segment when it is a plausible soldier name (clients put anything
    there, e.g. the literal SOLDIER); None otherwise."""
    if name is None:
        return None
    try:
        return parse_name(name)
    except InputError:
        return None


def like_prefix(text: str) -> str:
    """A LIKE pattern matching names that start with `text` (wildcards escaped)."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def parse_client_key(value: str) -> str:
    text = value.strip()[:100]
    return text or "anonymous"
