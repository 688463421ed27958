"""What every task's answers share: the submission answer and the part of a status view every
kind shows (`TaskView`: the status, the times, the queue position, the webhook's outcome). A
kind's own view (e.g. `service.schemas.upscale`) adds its request, result and error."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.domain.tasks import FAILED, FINAL, TIMED_OUT
from service.schemas.common import Timestamp

TaskStatus = Literal["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELED", "TIMED_OUT"]

# Where each kind's status is read: the one place the status links are made from.
_STATUS_PATHS = {
    "upscale": "/v1/video/upscale/{task_id}",
    "avatar_generation": "/v1/avatar/async_generate/{task_id}/status",
    "voice_clone": "/v1/voice/clone/{task_id}/status",
    "talking_video": "/v1/video/async_generate_talking_avatar/{task_id}/status",
    "motion_video": "/v1/video/async_generate_avatar_motion/{task_id}/status",
    "image_generation": "/v1/image/async_generate/{task_id}/status",
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
    attempted_at: Timestamp


class TaskView(msgspec.Struct, kw_only=True):
    """What every task's status view shows; a kind's view inherits it and adds its own fields
    (build it with `task_view_fields`)."""

    task_id: str
    kind: str
    status: TaskStatus
    stage: str
    progress: float
    status_url: str
    created_at: Timestamp
    updated_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    completed_at: Timestamp | None  # when it reached a final status, whichever
    queue_position: int | msgspec.UnsetType = msgspec.UNSET  # only while IN_QUEUE; 1 = next
    webhook: WebhookView | msgspec.UnsetType = msgspec.UNSET  # once a delivery was attempted


def task_view_fields(
    task: models.Task, base_url: str, queue_position: int | None
) -> dict[str, Any]:
    """The `TaskView` fields of `task`, its status link under `base_url`."""
    final = task.status in FINAL
    return {
        "task_id": task.task_id,
        "kind": task.kind,
        "status": task.status,
        "stage": task.stage,
        "progress": task.progress,
        "status_url": status_url(task, base_url),
        "created_at": format_ts(task.created_ms),
        "updated_at": format_ts(task.updated_ms),
        "started_at": format_optional_ts(task.started_ms),
        "finished_at": format_optional_ts(task.finished_ms),
        "completed_at": format_optional_ts(task.finished_ms if final else None),
        "queue_position": msgspec.UNSET if queue_position is None else queue_position,
        "webhook": _webhook_view(task.webhook_outcome),
    }


def _webhook_view(outcome: models.WebhookOutcome | None) -> WebhookView | msgspec.UnsetType:
    if outcome is None:
        return msgspec.UNSET
    return WebhookView(
        delivered=outcome.delivered,
        status_code=outcome.status_code,
        error=outcome.error,
        attempted_at=format_ts(outcome.attempted_ms),
    )


def error_view(task: models.Task) -> TaskErrorView | msgspec.UnsetType:
    """Only a failed or timed-out task shows `error` (clients read its presence as failure)."""
    if task.status not in (FAILED, TIMED_OUT) or task.error is None:
        return msgspec.UNSET
    return TaskErrorView(code=task.error.code, message=task.error.message)
