"""What every task's answers share: the submission answer, the error and webhook parts of a
status view, and its times. A kind's own view (e.g. `service.schemas.upscale`) adds the rest."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.domain.tasks import FAILED, FINAL, TIMED_OUT

TaskStatus = Literal["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELED", "TIMED_OUT"]

# Where each kind's status is read: the one place the status links are made from.
_STATUS_PATHS = {
    "upscale": "/v1/video/upscale/{task_id}",
    "avatar_generation": "/v1/avatar/async_generate/{task_id}/status",
}


def status_url(task: models.Task, base_url: str) -> str:
    """The absolute link of the task's status call."""
    return base_url + _STATUS_PATHS[task.kind].format(task_id=task.task_id)


class TaskSubmitted(msgspec.Struct, kw_only=True):
    task_id: str
    status: TaskStatus
    status_url: str

    @classmethod
    def of(cls, task: models.Task, base_url: str) -> TaskSubmitted:
        return cls(
            task_id=task.task_id,
            status=task.status,  # type: ignore[arg-type]
            status_url=status_url(task, base_url),
        )


class TaskSubmittedEnvelope(msgspec.Struct):
    data: TaskSubmitted


class TaskErrorView(msgspec.Struct, kw_only=True):
    code: str
    message: str


class WebhookView(msgspec.Struct, kw_only=True):
    """How the one webhook delivery went (the token is never shown)."""

    delivered: bool
    status_code: int | None
    error: str | None
    attempted_at: str


def task_times(task: models.Task) -> dict[str, Any]:
    """created_at ... completed_at of a view (completed_at once the task is final)."""
    final = task.status in FINAL
    return {
        "created_at": format_ts(task.created_ms),
        "updated_at": format_ts(task.updated_ms),
        "started_at": format_optional_ts(task.started_ms),
        "finished_at": format_optional_ts(task.finished_ms),
        "completed_at": format_optional_ts(task.finished_ms if final else None),
    }


def error_view(task: models.Task) -> TaskErrorView | msgspec.UnsetType:
    """Only a failed or timed-out task shows `error` (clients read its presence as failure)."""
    if task.status not in (FAILED, TIMED_OUT) or task.error is None:
        return msgspec.UNSET
    return TaskErrorView(code=task.error.code, message=task.error.message)


def webhook_view(task: models.Task) -> WebhookView | msgspec.UnsetType:
    outcome = task.webhook_outcome
    if outcome is None:
        return msgspec.UNSET
    return WebhookView(
        delivered=outcome.delivered,
        status_code=outcome.status_code,
        error=outcome.error,
        attempted_at=format_ts(outcome.attempted_ms),
    )


def position_view(position: int | None) -> int | msgspec.UnsetType:
    """`queue_position` is shown only while the task waits."""
    return msgspec.UNSET if position is None else position
