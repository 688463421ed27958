"""Webhooks: the rules a webhook URL must follow, checked when a task is submitted (syntax)
and again when it is sent (the syntax, then the addresses the host resolves to)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from service.domain.errors import ValidationFailed
from service.domain.models import WebhookTarget

MAX_URL_BYTES = 1000
MAX_TOKEN_BYTES = 512


def check_target(
    url: str | None,
    token: str | None,
    *,
    allow_private: bool,
    url_field: str,
    token_field: str,
    links_base: str,
) -> WebhookTarget | None:
    """The webhook of a submission, or None; ValidationFailed naming the field at fault.
    The checks run in this order: a token needs a URL, the token's size, the URL's size and
    scheme. `links_base` is the base of the links the submission's answer carried."""
    if url is None:
        if token is not None:
            raise ValidationFailed.field(token_field, f"needs {url_field}")
        return None
    if token is not None and len(token.encode()) > MAX_TOKEN_BYTES:
        raise ValidationFailed.field(token_field, f"must be at most {MAX_TOKEN_BYTES} bytes")
    check_url(url, allow_private=allow_private, field=url_field)
    return WebhookTarget(url, token or None, links_base)


def check_url(url: str, *, allow_private: bool, field: str) -> None:
    """An absolute https URL of at most 1,000 bytes (http too when private targets are
    allowed, for tests and closed networks)."""
    if len(url.encode()) > MAX_URL_BYTES:
        raise ValidationFailed.field(field, f"must be at most {MAX_URL_BYTES} bytes")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        raise ValidationFailed.field(field, "is not a valid URL") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes or not parts.hostname or parts.username or parts.password:
        allowed = "an http(s)" if allow_private else "an https"
        raise ValidationFailed.field(field, f"must be {allowed} URL without credentials")
    if port == 0:
        raise ValidationFailed.field(field, "is not a valid URL")


class DeliveryFailed(Exception):
    """A webhook could not be posted; the message says why (it is shown on the task)."""


class TargetRefused(DeliveryFailed):
    """A webhook target the rules do not allow at send time."""


# IPv6 ranges that carry an IPv4 address in their low 32 bits (NAT64's well-known prefix).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_public_address(text: str) -> bool:
    """A globally routable unicast address: the one rule for every target an owner chooses
    (webhooks, custom agent endpoints). An IPv6 address that carries an IPv4 one (mapped,
    6to4, Teredo, NAT64) is as public as that one."""
    return _public(ipaddress.ip_address(text))


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if address.version == 6:
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None,))[-1]
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return _public(embedded)
    return address.is_global and not address.is_multicast


def check_addresses(host: str, addresses: Iterable[str], *, allow_private: bool) -> None:
    """Raise TargetRefused unless every address `host` resolved to is public (any address
    will do when private targets are allowed): one private answer among public ones would
    let a host aim the service at its own network."""
    addresses = list(addresses)
    if not addresses:
        raise TargetRefused(f"Refused: {host} resolves to no address.")
    if allow_private:
        return
    for text in addresses:
        if not is_public_address(text):
            raise TargetRefused(
                f"Refused: {host} resolves to {text}, which is not a public address."
            )
