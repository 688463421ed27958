"""Webhooks: the rules a webhook URL must follow, checked when a task is submitted (syntax)
and again when it is sent (the addresses the host resolves to)."""

from __future__ import annotations

from urllib.parse import urlsplit

from service.domain.errors import ValidationFailed
from service.domain.models import WebhookTarget

MAX_URL_BYTES = 1000
MAX_TOKEN_BYTES = 512


def check_target(
    url: str | None, token: str | None, *, allow_private: bool, url_field: str, token_field: str
) -> WebhookTarget | None:
    """The webhook of a submission, or None; ValidationFailed naming the field at fault.
    The checks run in this order: a token needs a URL, the token's size, the URL's size and
    scheme."""
    if url is None:
        if token is not None:
            raise ValidationFailed.field(token_field, f"needs {url_field}")
        return None
    if token is not None and len(token.encode()) > MAX_TOKEN_BYTES:
        raise ValidationFailed.field(token_field, f"must be at most {MAX_TOKEN_BYTES} bytes")
    check_url(url, allow_private=allow_private, field=url_field)
    return WebhookTarget(url, token or None)


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
