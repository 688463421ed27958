"""Usage: /v1/usage."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Request

from service.api.context import ctx_of, owner_of
from service.api.openapi import get
from service.api.params import Cursor, Limit, text
from service.clock import parse_ts
from service.domain import usage as domain
from service.domain.errors import ValidationFailed
from service.domain.models import USAGE_KINDS
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.usage import UsageItem, UsagePage, UsagePageEnvelope, UsageTotals

Time = Annotated[str | None, text("RFC 3339 time; records count when ended_at is in range.")]
Kind = Annotated[str | None, text("Only the records of this kind.", enum=USAGE_KINDS)]
RouteFilter = Annotated[
    str | None, text("Only the conversations of this route (none for another owner's).")
]


def _time(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_ts(value)
    except ValueError as exc:
        raise ValidationFailed.field(name, str(exc)) from None


@get("/usage", tags=["usage"])
async def get_usage(
    request: Request,
    since: Time = None,
    until: Time = None,
    kind: Kind = None,
    route_id: RouteFilter = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> UsagePageEnvelope:
    """Usage records whose ended_at is in [since, until) (of one kind, or one route, when
    asked), newest first, with the totals of all they select."""
    page = page_request(limit, cursor)
    ctx = ctx_of(request)
    items, next_cursor, totals = await domain.list_usage(
        ctx,
        owner_of(request),
        _time("since", since),
        _time("until", until),
        page,
        kind=kind,
        route_id=route_id,
    )
    return UsagePageEnvelope(
        UsagePage(
            [UsageItem.of(r) for r in items],
            next_cursor,
            UsageTotals(**msgspec.structs.asdict(totals)),
        )
    )
