"""The `Idempotency-Key` header of task submissions: 1 to 255 printable ASCII characters."""

from __future__ import annotations

import re
from typing import Annotated

from service.api.params import text
from service.domain.errors import ValidationFailed
from service.domain.models import IdempotencyKey

HEADER = "Idempotency-Key"
_KEY = re.compile(r"[\x20-\x7e]{1,255}")

# The header as a parameter of every submission handler, so the OpenAPI document shows it.
IdempotencyKeyHeader = Annotated[
    str | None,
    text("1..255 printable ASCII: a repeat within 24 hours returns the first task.", header=HEADER),
]


def checked_key(value: str | None) -> str | None:
    """The header's value (None when absent), or ValidationFailed naming the header."""
    if value is not None and not _KEY.fullmatch(value):
        raise ValidationFailed.field(HEADER, "must be 1 to 255 printable ASCII characters")
    return value


def idempotency(value: str | None, fingerprint: str) -> IdempotencyKey | None:
    """The header's key with the fingerprint of the request it came with; None without it.
    (An upload's fingerprint is known only after its body is read, so an upload checks the
    header first with `checked_key` and leaves the pairing to the domain.)"""
    key = checked_key(value)
    return None if key is None else IdempotencyKey(key, fingerprint)
