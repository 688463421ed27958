"""Signed links: a path made readable without an API key until an expiry, by an HMAC-SHA256
of the path and the expiry keyed with the service's signing key. Whoever holds the link can
use it; nobody can change its path or push its expiry without the key."""

from __future__ import annotations

import base64
import hashlib
import hmac

from service.domain.errors import SignatureInvalid

# An expiry is Unix seconds; more digits than this is not one we made (and could overflow).
_MAX_EXPIRY_DIGITS = 12


def signature(key: bytes, path: str, expires_s: int) -> str:
    """The URL-safe base64 (unpadded) HMAC-SHA256 of `path` and `expires_s`."""
    digest = hmac.new(key, f"{path}\n{expires_s}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def signed_path(key: bytes, path: str, expires_s: int) -> str:
    """`path` with its `expires` and `signature` query parameters."""
    return f"{path}?expires={expires_s}&signature={signature(key, path, expires_s)}"


def verified_expiry(key: bytes, path: str, expires: str | None, given: str | None) -> int:
    """The expiry (Unix seconds) of a link to `path` whose signature verifies; raises
    SignatureInvalid otherwise. The comparison takes the same time wherever the signatures
    differ, so a forger learns nothing from timing."""
    valid_expiry = (
        expires is not None and expires.isascii() and expires.isdigit()
        and len(expires) <= _MAX_EXPIRY_DIGITS
    )  # fmt: skip
    if not valid_expiry or given is None:
        raise SignatureInvalid("This link is not valid: its signature does not verify.")
    expected = signature(key, path, int(expires)).encode()
    if not hmac.compare_digest(expected, given.encode("utf-8", "replace")):
        raise SignatureInvalid("This link is not valid: its signature does not verify.")
    return int(expires)
