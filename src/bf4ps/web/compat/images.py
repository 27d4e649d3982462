"""The images the compatible answers name, served here so that every image URL resolves: a
small generated picture per path (an SVG with the item's name; a PNG placeholder for the
bf4stats paths, which end in .png). BF4PS has no licence to EA's artwork."""

from __future__ import annotations

import re
import struct
import zlib
from functools import cache
from html import escape

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bf4ps.views.compat import IMAGE_PREFIX

PATH = re.compile(r"[a-z0-9_./-]{1,200}\.(svg|png)")
CACHE = {"Cache-Control": "public, max-age=86400", "Access-Control-Allow-Origin": "*"}


def svg(label: str) -> str:
    text = escape(label.replace("-", " ").upper()[:24])
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="256" height="64" '
            'viewBox="0 0 256 64"><rect width="256" height="64" rx="6" fill="#1d2733"/>'
            '<text x="128" y="38" font-family="sans-serif" font-size="16" fill="#e8eef4" '
            f'text-anchor="middle">{text}</text></svg>')


@cache
def png() -> bytes:
    """A 1x1 grey PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1x1, 8-bit greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


async def image(request: Request) -> Response:
    path = str(request.path_params["path"])
    match = PATH.fullmatch(path)
    if match is None or ".." in path:
        return Response("no such image", 404, media_type="text/plain")
    if match[1] == "png":
        return Response(png(), headers=CACHE, media_type="image/png")
    label = path.rsplit("/", 1)[-1].removesuffix(".svg")
    return Response(svg(label), headers=CACHE, media_type="image/svg+xml")


ROUTES = [Route(IMAGE_PREFIX + "/{path:path}", image, methods=["GET"])]
