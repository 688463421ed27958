"""Field types shared by several request bodies."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar.openapi.spec.enums import OpenAPIFormat
from litestar.params import KwargDefinition

# Strings are counted in code points, which is what msgspec's length constraints count.
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Identifier = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Instruction = Annotated[str, msgspec.Meta(max_length=20_000)]
Greeting = Annotated[str, msgspec.Meta(max_length=1_000)]
# MCP/function tools: an object, or an array of tool objects; its size is checked after decoding
# (<= 64 KB).
Tools = dict[str, Any] | list[dict[str, Any]]
# An RFC 3339 UTC time as `service.clock.format_ts` writes it; documented as a date-time, so a
# generated client reads a datetime.
Timestamp = Annotated[str, KwargDefinition(format=OpenAPIFormat.DATE_TIME)]


class StrictBody(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Base of create/update bodies: unknown fields are refused so typos surface."""
