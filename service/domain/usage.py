"""Usage (docs/api.md, "Usage"): listing recorded usage, and totals computed from those
records only."""

from __future__ import annotations

from service.domain.context import Context
from service.domain.errors import ValidationFailed
from service.domain.models import USAGE_KINDS, UsageFilter, UsageRecord, UsageTotals
from service.domain.pagination import PageRequest, Position, next_cursor

# [since, until) defaults: everything from the epoch up to the year 9999.
FAR_FUTURE_MS = 253_402_300_799_000


async def list_usage(
    ctx: Context,
    owner_id: str,
    since_ms: int | None,
    until_ms: int | None,
    page: PageRequest,
    *,
    kind: str | None = None,
    route_id: str | None = None,
) -> tuple[list[UsageRecord], str | None, UsageTotals]:
    """The owner's records ended in [since_ms, until_ms) (of one kind, or of one route, when
    given), newest first, and their totals over the whole filter (every key, 0 when none). A
    route the owner does not have selects nothing: usage is a report, not a lookup."""
    which = UsageFilter(
        0 if since_ms is None else since_ms,
        FAR_FUTURE_MS if until_ms is None else until_ms,
        kind,
        route_id,
    )
    if which.since_ms > which.until_ms:
        raise ValidationFailed.field("until", "must not be before since")
    if kind is not None and kind not in USAGE_KINDS:
        raise ValidationFailed.field("kind", f"must be one of {', '.join(USAGE_KINDS)}")
    rows = await ctx.store.list_usage(owner_id, which, page)
    items, cursor = next_cursor(rows, page.limit, lambda u: Position(u.ended_ms, u.usage_id))
    totals = await ctx.store.usage_totals(owner_id, which)
    return items, cursor, totals
