"""Usage bodies (docs/api.md, "Usage")."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.clock import format_ts
from service.domain import models
from service.schemas.common import Timestamp


class UsageItem(msgspec.Struct):
    kind: Literal[models.USAGE_KINDS]  # the tuple's names, as one Literal
    ref_id: str
    started_at: Timestamp
    ended_at: Timestamp
    seconds: float
    billable_seconds: float
    route_id: str | msgspec.UnsetType = msgspec.UNSET  # on route conversations only

    @classmethod
    def of(cls, record: models.UsageRecord) -> UsageItem:
        return cls(
            kind=record.kind,
            ref_id=record.ref_id,
            started_at=format_ts(record.started_ms),
            ended_at=format_ts(record.ended_ms),
            seconds=record.seconds,
            billable_seconds=record.billable_seconds,
            route_id=msgspec.UNSET if record.route_id is None else record.route_id,
        )


class UsageTotals(msgspec.Struct):
    route_conversation_seconds: float
    session_seconds: float
    upscale_billable_seconds: float
    tts_seconds: float
    stt_seconds: float
    talking_video_seconds: float
    motion_video_seconds: float
    image_count: int


class UsagePage(msgspec.Struct):
    items: list[UsageItem]
    next_cursor: str | None
    totals: UsageTotals


class UsagePageEnvelope(msgspec.Struct):
    data: UsagePage
