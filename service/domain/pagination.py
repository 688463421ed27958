"""Cursor pagination: lists are newest first, ordered by (sort time, id), and a cursor is the
opaque position of the last item returned."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

import msgspec

from service.domain.errors import ValidationFailed

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


# A forged cursor must not carry a time SQLite cannot bind (a 64-bit signed integer).
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class Position(msgspec.Struct, frozen=True, array_like=True):
    """The (sort time, id) of the last item on a page; the next page starts strictly after it."""

    ms: _Int64
    id: str


class PageRequest(msgspec.Struct, frozen=True):
    limit: int = DEFAULT_LIMIT
    after: Position | None = None


# The lists kept in the hosted API's shape (a bare array, no cursor) answer the newest
# MAX_UNPAGED items: the first page of this size.
MAX_UNPAGED = 1_000
UNPAGED = PageRequest(limit=MAX_UNPAGED)


def encode_cursor(position: Position) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(position)).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return msgspec.json.decode(raw, type=Position)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise ValidationFailed.field("cursor", "is not a cursor returned by this list") from None


def page_request(limit: int | None, cursor: str | None) -> PageRequest:
    """Validate the `limit` and `cursor` query parameters of a list call."""
    if limit is None:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed.field("limit", f"must be between 1 and {MAX_LIMIT}")
    return PageRequest(limit=limit, after=decode_cursor(cursor) if cursor else None)


def next_cursor(rows: list, limit: int, position_of) -> tuple[list, str | None]:
    """Split `limit + 1` fetched rows into the page and the cursor of the next one (or None)."""
    if len(rows) <= limit:
        return rows, None
    page = rows[:limit]
    return page, encode_cursor(position_of(page[-1]))
