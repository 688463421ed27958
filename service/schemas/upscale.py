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
from service.schemas.tasks import TaskErrorView, TaskView, error_view, task_view_fields


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


class UpscaleTask(TaskView, kw_only=True):
    """An upscale task as its status call shows it: every task's fields, then its own.
    `result` and `billing` only when COMPLETED (and `result` only while readable); `error`
    only when FAILED or TIMED_OUT."""

    resolution: str
    input: UpscaleInput
    result: UpscaleResult | msgspec.UnsetType = _UNSET
    billing: Billing | msgspec.UnsetType = _UNSET
    error: TaskErrorView | msgspec.UnsetType = _UNSET

    @classmethod
    def of(
        cls,
        task: models.Task,
        base_url: str,
        *,
        file_link: str | None = None,
        queue_position: int | None = None,
    ) -> UpscaleTask:
        """The view of `task`, with links under `base_url`; `file_link` is the link of its
        readable result (None when there is none to show)."""
        completed = task.status == COMPLETED and task.result is not None
        shown = completed and file_link is not None
        return cls(
            **task_view_fields(task, base_url, queue_position),
            resolution=task.params["resolution"],
            input=_input(task.input or {}),
            result=_result(task, _absolute(base_url, file_link)) if shown else _UNSET,
            billing=_billing(task) if completed else _UNSET,
            error=error_view(task),
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


def _absolute(base_url: str, link: str) -> str:
    """A signed path goes under `base_url`; a file store's own link (S3) is absolute."""
    return link if "://" in link else base_url + link


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
