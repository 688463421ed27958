"""Where the service may send a request an owner asked for (webhook URLs, custom agent
endpoints): the one rule for those URLs and for the addresses their hosts resolve to.

A URL is checked when it is saved and again when it is used (the setting may have changed
since, and a URL stored by an older version may not follow today's rule); the addresses its
host resolves to are checked when the connection opens. This module is a leaf: it imports
nothing of the service, so the domain, the responders and the workers all take the rule from
here without importing one another."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

MAX_URL_BYTES = 1000

# A host name written in ASCII: dot-separated labels of letters, digits, '-' and '_' (used in
# some service names); an internationalised name is given in its xn-- form.
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253
# A last label that makes a host an IPv4 address in a browser's reading (and glibc's):
# 2130706433, 0177.0.0.1 and 0x7f.1 all mean 127.0.0.1.
_NUMERIC = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
# Names that never lead to a public host: loopback (RFC 6761; Debian's /etc/hosts), mDNS,
# and the suffixes reserved for private networks.
_PRIVATE_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_PRIVATE_SUFFIXES = (".localhost", ".local", ".localdomain", ".internal", ".home.arpa")
# IPv6 ranges that carry an IPv4 address in their low 32 bits (NAT64's well-known prefix).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UrlRefused(ValueError):
    """A URL the rule does not allow; the message says why, as the end of a sentence that
    begins with the field's name ("must be an https URL ...")."""


def check_url(url: str, *, allow_private: bool) -> None:
    """An absolute https URL of at most 1,000 bytes, without credentials, spaces or control
    characters, whose host is a name or an address in its standard form, and (unless private
    targets are allowed, for tests and closed networks: then http too) neither a non-public
    address nor a name that can only lead to one."""
    if len(url.encode()) > MAX_URL_BYTES:
        raise UrlRefused(f"must be at most {MAX_URL_BYTES} bytes")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise UrlRefused("must not contain spaces or control characters")
    parts = _split(url)
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes or not parts.hostname or "@" in parts.netloc:
        allowed = "an http(s)" if allow_private else "an https"
        raise UrlRefused(f"must be {allowed} URL without credentials")
    host = parts.hostname
    address = _address(host, bracketed=parts.netloc.rpartition("@")[2].startswith("["))
    if allow_private:
        return
    if address is not None and not is_public(address):
        raise UrlRefused(f"names {address}, which is not a public address")
    if address is None and _private_name(host):
        raise UrlRefused("names a host that leads only to this machine or a private network")


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        raise UrlRefused("is not a valid URL") from None
    if port == 0:
        raise UrlRefused("is not a valid URL")
    return parts


def _address(host: str, *, bracketed: bool) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `host` is written as, or None for a name; UrlRefused for anything else."""
    if "%" in host:  # an encoded host, or an IPv6 zone: neither names a public host
        raise UrlRefused("has a %-encoded host; write the host name or address as it is")
    if bracketed:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise UrlRefused("has an IPv6 address that is not valid") from None
    name = host.removesuffix(".")
    if _NUMERIC.fullmatch(name.rpartition(".")[2]):
        try:
            return ipaddress.IPv4Address(name)
        except ValueError:
            raise UrlRefused(
                "has a host that is neither a name nor an IPv4 address in its standard form "
                "(four decimal numbers such as 203.0.113.7)"
            ) from None
    labels = name.split(".")
    if len(name) > _MAX_NAME or not all(_LABEL.fullmatch(label) for label in labels):
        raise UrlRefused(
            "has a host that is not a valid name (letters, digits, '-' and '.'; an "
            "internationalised name in its xn-- form)"
        )
    return None


def _private_name(host: str) -> bool:
    """A name that can only lead to this machine or a private network: a loopback name, a
    reserved private suffix, or a single label (completed by the resolver's search list)."""
    name = host.removesuffix(".")
    return name in _PRIVATE_NAMES or name.endswith(_PRIVATE_SUFFIXES) or "." not in name


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
