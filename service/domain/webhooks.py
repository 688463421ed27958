"""Webhooks: a submission's webhook fields, checked when a task is submitted (the URL under
the rule of `service.outbound`) and again when it is sent (the URL, then the addresses its
host resolves to)."""

from __future__ import annotations

from collections.abc import Iterable

from service import outbound
from service.domain.errors import ValidationFailed
from service.domain.models import WebhookTarget

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
    The checks run in this order: a token needs a URL, the token's size, the URL.
    `links_base` is the base of the links the submission's answer carried."""
    if url is None:
        if token is not None:
            raise ValidationFailed.field(token_field, f"needs {url_field}")
        return None
    if token is not None and len(token.encode()) > MAX_TOKEN_BYTES:
        raise ValidationFailed.field(token_field, f"must be at most {MAX_TOKEN_BYTES} bytes")
    check_url(url, allow_private=allow_private, field=url_field)
    return WebhookTarget(url, token or None, links_base)


def check_url(url: str, *, allow_private: bool, field: str) -> None:
    """The rule of `service.outbound` for an owner's URL, as a ValidationFailed naming the
    field at fault."""
    try:
        outbound.check_url(url, allow_private=allow_private)
    except outbound.UrlRefused as exc:
        raise ValidationFailed.field(field, str(exc)) from None


class DeliveryFailed(Exception):
    """A webhook could not be posted; the message says why (it is shown on the task)."""


class TargetRefused(DeliveryFailed):
    """A webhook target the rules do not allow at send time."""


def check_addresses(host: str, addresses: Iterable[str], *, allow_private: bool) -> None:
    """Raise TargetRefused unless every address `host` resolved to is public (any address
    will do when private targets are allowed): one private answer among public ones would
    let a host aim the service at its own network."""
    addresses = list(addresses)
    if not addresses:
        raise TargetRefused(f"Refused: {host} resolves to no address.")
    if refused := outbound.refused_addresses(addresses, allow_private=allow_private):
        raise TargetRefused(
            f"Refused: {host} resolves to {refused[0]}, which is not a public address."
        )
