"""Video upscale answers: the task's status view (the answer to a status call, and the body of
the task's webhook), made from what `service.domain.upscale.status` reads, and its list."""

from __future__ import annotations

from typing import Any

import msgspec

from service.clock import format_ts
from service.domain import models
from service.domain.tasks import COMPLETED
from service.domain.upscale.status import UpscaleState
from service.schemas.common import Timestamp
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
    readable_until: Timestamp


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
    filter: str | msgspec.UnsetType = _UNSET  # absent on tasks queued before it was chosen
    input: UpscaleInput
    result: UpscaleResult | msgspec.UnsetType = _UNSET
    billing: Billing | msgspec.UnsetType = _UNSET
    error: TaskErrorView | msgspec.UnsetType = _UNSET

    @classmethod
    def of(cls, state: UpscaleState, base_url: str) -> UpscaleTask:
        """The view of the task's `state`, with links under `base_url` (AVATAR_PUBLIC_URL,
        else the scheme and host of the request) unless the file store gave an absolute one."""
        task, link = state.task, state.result_link
        completed = task.status == COMPLETED and task.result is not None
        return cls(
            **task_view_fields(task, base_url, state.queue_position),
            resolution=task.params["resolution"],
            filter=task.params.get("filter", _UNSET),
            input=_input(task.input or {}),
            result=_UNSET if link is None else _result(task, absolute_link(base_url, link)),
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


def absolute_link(base_url: str, link: str) -> str:
    """A signed path goes under `base_url`; a file store's own link (S3) is absolute."""
    return link if "://" in link else base_url + link


class UpscaleTaskEnvelope(msgspec.Struct):
    data: UpscaleTask


class UpscaleTaskPage(msgspec.Struct):
    items: list[UpscaleTask]
    next_cursor: str | None


class UpscaleTaskPageEnvelope(msgspec.Struct):
    data: UpscaleTaskPage
