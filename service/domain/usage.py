"""Usage (docs/api.md, "Usage"): listing recorded usage, and totals computed from those
records only."""

from __future__ import annotations

from service.domain.context import Context
from service.domain.errors import ValidationFailed
from service.domain.models import UsageRecord, UsageTotals
from service.domain.pagination import PageRequest, Position, next_cursor

# [since, until) defaults: everything from the epoch up to the year 9999.
FAR_FUTURE_MS = 253_402_300_799_000


async def list_usage(
    ctx: Context, owner_id: str, since_ms: int | None, until_ms: int | None, page: PageRequest
) -> tuple[list[UsageRecord], str | None, UsageTotals]:
    since_ms = 0 if since_ms is None else since_ms
    until_ms = FAR_FUTURE_MS if until_ms is None else until_ms
    if since_ms > until_ms:
        raise ValidationFailed.field("until", "must not be before since")
    rows = await ctx.store.list_usage(owner_id, since_ms, until_ms, page)
    items, cursor = next_cursor(rows, page.limit, lambda u: Position(u.ended_ms, u.usage_id))
    totals = await ctx.store.usage_totals(owner_id, since_ms, until_ms)
    return items, cursor, totals
