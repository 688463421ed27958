"""The `Idempotency-Key` header of task submissions: 1 to 255 printable ASCII characters."""

from __future__ import annotations

import re

from litestar import Request

from service.domain.errors import ValidationFailed
from service.domain.models import IdempotencyKey

HEADER = "Idempotency-Key"
_KEY = re.compile(r"[\x20-\x7e]{1,255}")


def idempotency_key(request: Request, fingerprint: str) -> IdempotencyKey | None:
    """The submission's key with the fingerprint of its request; None without the header."""
    value = checked_key(request.headers.get(HEADER))
    return None if value is None else IdempotencyKey(value, fingerprint)


def checked_key(value: str | None) -> str | None:
    """The header's value (None when absent), or ValidationFailed naming the header. For a
    submission whose fingerprint is known only after its body was read (an upload), so the
    header is checked first."""
    if value is not None and not _KEY.fullmatch(value):
        raise ValidationFailed.field(HEADER, "must be 1 to 255 printable ASCII characters")
    return value
