"""Who a request comes from, for the limits that count per client: the address uvicorn reports
(the proxy's X-Forwarded-For when the proxy is trusted), an IPv6 address grouped by its
network prefix (BF4PS_CLIENT_IPV6_PREFIX_LENGTH, a /64 by default: one host or one customer
line holds a whole /64, so counting exact addresses would give it no limit at all)."""

from __future__ import annotations

import ipaddress

from starlette.requests import Request

FORWARDING_HEADERS = (b"x-forwarded-for", b"forwarded", b"x-real-ip")
LOOPBACK_NAMES = ("localhost",)


def address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def network(host: str, ipv6_prefix: int) -> str:
    """`host`'s limit key: an IPv4 address as is, an IPv6 one as its /`ipv6_prefix` network
    (an IPv4-mapped IPv6 address as the IPv4 address), anything else (a test client's name)
    as is."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:100]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))
    return str(ip)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def direct_from_loopback(request: Request) -> bool:
    """The connection comes from this host and carries no proxy's forwarding header: a scraper
    beside the website, not a client reaching it through a reverse proxy."""
    forwarded = any(name in FORWARDING_HEADERS for name, _ in request.scope.get("headers", []))
    return not forwarded and is_loopback(address(request))
