"""The body of a task's webhook: its status response (`{"data": {...}}`), as the status
endpoint of its kind would answer at that moment. `BODIES` is the one place that says which
view renders each kind; the webhook sender (`service.workers.webhooks`) renders through it.

Links in a body are made under `webhook_base_url`: a webhook answers no request whose host
the links could use."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain.context import Context
from service.domain.models import Task
from service.domain.tasks import COMPLETED, FAILED, FINAL, TIMED_OUT
from service.settings import Settings

# (ctx, task, base_url) -> the JSON body: what the kind's status endpoint would send now.
WebhookBody = Callable[[Context, Task, str], bytes]


def task_fields(task: Task) -> dict[str, Any]:
    """What every kind's status view shows, read from the task alone."""
    fields: dict[str, Any] = {
        "task_id": task.task_id,
        "kind": task.kind,
        "status": task.status,
        "stage": task.stage,
        "progress": task.progress,
        "created_at": format_ts(task.created_ms),
        "updated_at": format_ts(task.updated_ms),
        "started_at": format_optional_ts(task.started_ms),
        "finished_at": format_optional_ts(task.finished_ms),
        "completed_at": format_optional_ts(task.finished_ms if task.status in FINAL else None),
    }
    if task.status == COMPLETED:
        fields["result"] = task.result
    if task.status in (FAILED, TIMED_OUT) and task.error is not None:
        fields["error"] = {"code": task.error.code, "message": task.error.message}
    return fields


def _upscale_body(ctx: Context, task: Task, base_url: str) -> bytes:
    # Stands in for the upscale status view until the upscale API provides it: that view
    # adds the request, the input facts, a freshly signed file_url and billing.
    status_url = f"{base_url}/v1/video/upscale/{task.task_id}"
    return msgspec.json.encode({"data": task_fields(task) | {"status_url": status_url}})


def _plain_body(ctx: Context, task: Task, base_url: str) -> bytes:
    return msgspec.json.encode({"data": task_fields(task)})


BODIES: dict[str, WebhookBody] = {"upscale": _upscale_body}


def webhook_body(ctx: Context, task: Task, base_url: str) -> bytes:
    """The body of `task`'s webhook (a kind without a view of its own gets the fields every
    task has)."""
    return BODIES.get(task.kind, _plain_body)(ctx, task, base_url)


def webhook_base_url(settings: Settings) -> str:
    """AVATAR_PUBLIC_URL, else the address `serve` listens on (a wildcard address is named
    by this machine's host name, never 0.0.0.0)."""
    if settings.public_url:
        return settings.public_url
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"
