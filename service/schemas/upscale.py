"""Video upscale answers: the task's status view (the answer to a status call, and the body of
the task's webhook: `upscale_status`) and its list."""

from __future__ import annotations

from typing import Any

import msgspec

from service.clock import format_ts
from service.domain import models
from service.domain import upscale as domain
from service.domain.context import Context
from service.domain.tasks import COMPLETED, queue_position
from service.schemas.tasks import (
    TaskErrorView,
    TaskStatus,
    WebhookView,
    error_view,
    position_view,
    status_url,
    task_times,
    webhook_view,
)


class UpscaleInput(msgspec.Struct, kw_only=True):
    width: int
    height: int
    duration: float
    frame_rate: float
    frame_rate_fraction: str
    frames: int
    has_audio: bool
    size_bytes: int


class UpscaleOutput(msgspec.Struct, kw_only=True):
    file_url: str
    width: int
    height: int
    duration: float
    frame_rate: float
    frame_rate_fraction: str
    frames: int
    size_bytes: int
    readable_until: str


class UpscaleResult(msgspec.Struct, kw_only=True):
    output: UpscaleOutput


class Billing(msgspec.Struct, kw_only=True):
    billable_seconds: float


_UNSET: Any = msgspec.UNSET


class UpscaleTask(msgspec.Struct, kw_only=True):
    """An upscale task as its status call shows it. `queue_position` only while IN_QUEUE;
    `result` and `billing` only when COMPLETED (and `result` only while readable); `error`
    only when FAILED or TIMED_OUT; `webhook` once its delivery was attempted."""

    task_id: str
    kind: str
    status: TaskStatus
    stage: str
    progress: float
    resolution: str
    created_at: str
    updated_at: str
    started_at: str | None
    finished_at: str | None
    completed_at: str | None
    status_url: str
    input: UpscaleInput
    queue_position: int | msgspec.UnsetType = _UNSET
    result: UpscaleResult | msgspec.UnsetType = _UNSET
    billing: Billing | msgspec.UnsetType = _UNSET
    error: TaskErrorView | msgspec.UnsetType = _UNSET
    webhook: WebhookView | msgspec.UnsetType = _UNSET

    @classmethod
    def of(
        cls,
        task: models.Task,
        base_url: str,
        *,
        file_link: str | None = None,
        queue_position: int | None = None,
    ) -> UpscaleTask:
        """The view of `task`, with links under `base_url`; `file_link` is the signed path of
        its readable result (None when there is none to show)."""
        completed = task.status == COMPLETED and task.result is not None
        return cls(
            task_id=task.task_id,
            kind=task.kind,
            status=task.status,  # type: ignore[arg-type]
            stage=task.stage,
            progress=task.progress,
            resolution=task.params["resolution"],
            **task_times(task),
            status_url=status_url(task, base_url),
            input=_input(task.input or {}),
            queue_position=position_view(queue_position),
            result=_result(task, base_url + file_link) if completed and file_link else _UNSET,
            billing=_billing(task) if completed else _UNSET,
            error=error_view(task),
            webhook=webhook_view(task),
        )


def _input(facts: dict[str, Any]) -> UpscaleInput:
    return UpscaleInput(**{name: facts[name] for name in UpscaleInput.__struct_fields__})


def _billing(task: models.Task) -> Billing:
    return Billing(billable_seconds=task.result["billable_seconds"])


def _result(task: models.Task, file_url: str) -> UpscaleResult:
    output = task.result["output"]
    return UpscaleResult(
        output=UpscaleOutput(
            file_url=file_url,
            readable_until=format_ts(task.readable_until_ms or 0),
            **{name: output[name] for name in UpscaleOutput.__struct_fields__ if name in output},
        )
    )


class UpscaleTaskEnvelope(msgspec.Struct):
    data: UpscaleTask


async def upscale_view(ctx: Context, task: models.Task, base_url: str) -> UpscaleTask:
    """The view of `task` now: its queue position, and a freshly signed link to its result
    while that is readable. `base_url` starts the links: AVATAR_PUBLIC_URL, else the scheme and
    host of the request."""
    readable = task.status == COMPLETED and not domain.result_gone(task, ctx.clock.now_ms())
    return UpscaleTask.of(
        task,
        base_url,
        file_link=domain.result_link(ctx, task) if readable else None,
        queue_position=await queue_position(ctx, task),
    )


async def upscale_status(ctx: Context, task: models.Task, base_url: str) -> UpscaleTaskEnvelope:
    """The status response of an upscale task (also its webhook's body)."""
    return UpscaleTaskEnvelope(await upscale_view(ctx, task, base_url))


class UpscaleTaskPage(msgspec.Struct):
    items: list[UpscaleTask]
    next_cursor: str | None


class UpscaleTaskPageEnvelope(msgspec.Struct):
    data: UpscaleTaskPage
