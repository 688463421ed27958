"""What a reverse proxy says about a request it passes on: the visitor's address
(`X-Forwarded-For`, or `for=` of `Forwarded`) and the scheme and host the visitor called
(`X-Forwarded-Proto` / `X-Forwarded-Host`, or `proto=` / `host=` of `Forwarded`). Anyone can
send these headers, so they are read only from a peer in AVATAR_TRUSTED_PROXIES, and only as
far back along the chain as the proxies on it are trusted.

Each proxy on the chain appends its own peer to the list of addresses. Read from the right, the
list's addresses are trusted proxies up to the first that is not: that one is the visitor (an
address the visitor wrote itself lies further left and is never reached). The scheme and host
are the ones the outermost trusted proxy recorded: the value as many places from the right as
trusted proxies handled the request, or the leftmost when the proxies overwrite the header
rather than append to it."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from service.links import authority

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Scope = dict

# A host as a link may carry it: a name or IPv4 address, or an IPv6 address in brackets, and
# an optional port. Anything else (spaces, '/', '@', quotes) could rewrite the link.
_HOST = re.compile(r"(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Origin:
    """Who called, and how: the visitor's address and the scheme and host of its request."""

    client: str
    scheme: str
    host: str | None  # None: neither a trusted proxy nor the request named one


def origin(scope: Scope, trusted: Sequence[Network]) -> Origin:
    headers = _headers(scope)
    peer = (scope.get("client") or ("", 0))[0]
    host = headers.get("host", [None])[-1]
    if not trusted or not _is_trusted(peer, trusted):
        return Origin(peer, scope["scheme"], host)
    if "forwarded" in headers:
        hops = [_pairs(element) for element in _split(headers["forwarded"])]
        chain = [_address(hop.get("for", "")) for hop in hops]
        protos = [hop.get("proto", "") for hop in hops]
        hosts = [hop.get("host", "") for hop in hops]
    else:
        chain = [_address(value) for value in _split(headers.get("x-forwarded-for", []))]
        protos = _split(headers.get("x-forwarded-proto", []))
        hosts = _split(headers.get("x-forwarded-host", []))
    client, proxies = _walk(peer, chain, trusted)
    proto = _outermost(protos, proxies).lower()
    forwarded_host = _outermost(hosts, proxies)
    return Origin(
        client,
        proto if proto in _SCHEMES else scope["scheme"],
        forwarded_host if _HOST.fullmatch(forwarded_host) else host,
    )


def base_url(scope: Scope, trusted: Sequence[Network]) -> str:
    """`scheme://host` of the request as the visitor made it (see `origin`); without a host
    (HTTP/1.0), the address the request came in on."""
    called = origin(scope, trusted)
    if called.host is None:
        host, port = scope.get("server") or ("localhost", None)
        return f"{called.scheme}://{authority(host, port)}"
    return f"{called.scheme}://{called.host}"


def client_address(scope: Scope, trusted: Sequence[Network]) -> str:
    return origin(scope, trusted).client


def _walk(peer: str, chain: list[str | None], trusted: Sequence[Network]) -> tuple[str, int]:
    """(the visitor's address, how many trusted proxies handled the request: the peer, and
    every trusted address the walk passed)."""
    client, proxies = peer, 1
    for address in reversed(chain):
        if address is None:  # a value no proxy writes: the walk cannot go further back
            break
        client = address
        if not _is_trusted(address, trusted):
            break
        proxies += 1
    return client, proxies


def _outermost(values: list[str], proxies: int) -> str:
    return values[max(0, len(values) - proxies)] if values else ""


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)


def _address(value: str) -> str | None:
    """The address of a list entry (`192.0.2.7`, `192.0.2.7:4711`, `[2001:db8::7]:4711`,
    `"[2001:db8::7]"`); None for anything else (`unknown`, an obfuscated `_hidden`)."""
    value = value.strip().strip('"')
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _headers(scope: Scope) -> dict[str, list[str]]:
    """The request's headers of interest, by lower-case name, each line in order."""
    found: dict[str, list[str]] = {}
    for name, value in scope["headers"]:
        if name in _WANTED:
            found.setdefault(name.decode(), []).append(value.decode("latin-1"))
    return found


_WANTED = {b"host", b"forwarded", b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host"}


def _split(lines: list[str]) -> list[str]:
    """The comma-separated values of a header's lines, in order (several lines are one list)."""
    return [value.strip() for line in lines for value in line.split(",")]


def _pairs(element: str) -> dict[str, str]:
    """`for=...;proto=...;host=...` of one `Forwarded` element, names lower-cased and quotes
    removed (a comma inside a quoted value is not supported: no proxy sends one in these)."""
    pairs = {}
    for pair in element.split(";"):
        name, _, value = pair.partition("=")
        pairs[name.strip().lower()] = value.strip().strip('"')
    return pairs
