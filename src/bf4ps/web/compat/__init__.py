"""The community-compatible endpoints: gametools.network's (gametools.py) and bf4stats.com's
(bf4stats.py) formats over BF4PS's stored statistics, and the images they name (images.py)."""

from starlette.routing import BaseRoute

from bf4ps.web.compat import bf4stats, gametools, images

ROUTES: list[BaseRoute] = [*gametools.ROUTES, *bf4stats.ROUTES, *images.ROUTES]
