"""The checks of an upscale request: its resolution, its webhook and filter (the form's text
fields), and the inspection of the uploaded video (headers only, before the task is accepted)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import engine
from service.domain.context import Context
from service.domain.errors import InvalidVideo, TargetNotLarger, ValidationFailed
from service.domain.files import FileStore, upload_key
from service.domain.models import WebhookTarget
from service.domain.webhooks import check_target

# The boxes a video can be fitted in.
RESOLUTIONS: tuple[str, ...] = tuple(engine.RESOLUTIONS)
_RESOLUTIONS = ", ".join(RESOLUTIONS)
# The submission's text fields (beside the `file` part).
WEBHOOK_URL = "webhook_url"
WEBHOOK_TOKEN = "webhook_token"
FILTER = "filter"  # the resampling filter; AVATAR_FILTER when absent


def check_resolution(resolution: str | None) -> str:
    if resolution is None:
        raise ValidationFailed.field("resolution", f"is required: one of {_RESOLUTIONS}")
    if resolution not in RESOLUTIONS:
        raise ValidationFailed.field("resolution", f"must be one of {_RESOLUTIONS}")
    return resolution


def check_filter(ctx: Context, fields: Mapping[str, str]) -> str:
    """The filter the form asks for, or AVATAR_FILTER."""
    settings = ctx.settings
    chosen = fields.get(FILTER)
    if chosen is None:
        return settings.filter
    if chosen not in engine.FILTERS:
        raise ValidationFailed.field(FILTER, f"must be one of {', '.join(engine.FILTERS)}")
    if chosen == "detail" and settings.kernel != "native":
        raise ValidationFailed.field(FILTER, "detail needs the native kernel, not this server's")
    return chosen


def check_webhook(ctx: Context, fields: Mapping[str, str], links_base: str) -> WebhookTarget | None:
    """The webhook the form's text fields name, or None. `links_base` starts the links of the
    answers (and of the webhook's body)."""
    return check_target(
        fields.get(WEBHOOK_URL),
        fields.get(WEBHOOK_TOKEN),
        allow_private=ctx.settings.webhook_allow_private,
        url_field=WEBHOOK_URL,
        token_field=WEBHOOK_TOKEN,
        links_base=links_base,
    )


def _inspect(path: str, resolution: str, max_bytes: int) -> dict[str, Any]:
    try:
        info = engine.probe(path, max_file_size=max_bytes)
        out_w, out_h = engine.plan(info, resolution)
    except engine.InvalidVideo as exc:
        details = {"limit": exc.limit, "actual": exc.actual, "allowed": exc.allowed}
        raise InvalidVideo(f"The video breaks an input limit: {exc.message}.", details) from None
    except engine.TargetNotLarger as exc:
        raise TargetNotLarger(f"Nothing to upscale: {exc}.") from None
    return {
        "width": info.width,
        "height": info.height,
        "duration": info.duration,
        "frame_rate": info.frame_rate,
        "frame_rate_fraction": info.frame_rate_fraction,
        "frames": info.frames,
        "has_audio": info.has_audio,
        "size_bytes": info.size_bytes,
        "output_width": out_w,
        "output_height": out_h,
    }


async def inspect_upload(ctx: Context, task_id: str, resolution: str) -> dict[str, Any]:
    """The uploaded video's facts (its headers checked against every input limit, then the
    box fit); raises InvalidVideo or TargetNotLarger. In a thread: the file store may have
    to fetch the upload first."""
    return await asyncio.to_thread(
        _inspect_stored, ctx.files, upload_key(task_id), resolution, ctx.settings.max_upload_bytes
    )


def _inspect_stored(files: FileStore, key: str, resolution: str, max_bytes: int) -> dict:
    with files.local_copy(key) as path:
        return _inspect(str(path), resolution, max_bytes)
