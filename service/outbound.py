"""Where the service may send a request an owner asked for (webhook URLs, custom agent
endpoints): the one rule for those URLs and for the addresses their hosts resolve to.

A URL is checked when it is saved and again when it is used (the setting may have changed
since, and a URL stored by an older version may not follow today's rule); the addresses its
host resolves to are checked when the connection opens. This module is a leaf: it imports
nothing of the service, so the domain, the responders and the workers all take the rule from
here without importing one another."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

MAX_URL_BYTES = 1000

# IPv6 ranges that carry an IPv4 address in their low 32 bits (NAT64's well-known prefix).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UrlRefused(ValueError):
    """A URL the rule does not allow; the message says why, as the end of a sentence that
    begins with the field's name ("must be an https URL ...")."""


def check_url(url: str, *, allow_private: bool) -> None:
    """An absolute https URL of at most 1,000 bytes without credentials (http too when
    private targets are allowed, for tests and closed networks)."""
    if len(url.encode()) > MAX_URL_BYTES:
        raise UrlRefused(f"must be at most {MAX_URL_BYTES} bytes")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        raise UrlRefused("is not a valid URL") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes or not parts.hostname or parts.username or parts.password:
        allowed = "an http(s)" if allow_private else "an https"
        raise UrlRefused(f"must be {allowed} URL without credentials")
    if port == 0:
        raise UrlRefused("is not a valid URL")


def is_public_address(text: str) -> bool:
    """Whether the address written as `text` is public (see `is_public`)."""
    return is_public(ipaddress.ip_address(text))


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A globally routable unicast address: the one rule for every target an owner chooses.
    An IPv6 address that carries an IPv4 one (mapped, 6to4, Teredo, NAT64) is as public as
    that one."""
    if address.version == 6:
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None,))[-1]
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(embedded)
    return address.is_global and not address.is_multicast


def refused_addresses(addresses: Iterable[str], *, allow_private: bool) -> list[str]:
    """The addresses among those a host resolved to that a request may not go to ([] when
    private targets are allowed). One private answer among public ones is enough to refuse
    the host: it would let the host aim the service at its own network."""
    if allow_private:
        return []
    return [text for text in addresses if not is_public_address(text)]
