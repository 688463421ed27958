"""Asynchronous tasks: their statuses, the one function that moves a task between them, and
what every kind of task shares: submission (idempotency keys, the per-owner queue limit),
reading, listing and cancelling. What a kind does when it runs is in its own module
(`upscale`, `generation`); how a worker runs it is in `task_runs`."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from service.domain.context import Context
from service.domain.errors import IdempotencyKeyReused, NotFound, QueueFull, TaskFinished, echo
from service.domain.models import (
    Admission,
    Delivery,
    IdempotencyKey,
    Task,
    WebhookTarget,
)
from service.domain.ownership import require_owned
from service.domain.pagination import PageRequest, Position, next_cursor

IN_QUEUE = "IN_QUEUE"
IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELED = "CANCELED"
TIMED_OUT = "TIMED_OUT"
FINAL = frozenset({COMPLETED, FAILED, CANCELED, TIMED_OUT})

# Every move a task can make. IN_PROGRESS -> IN_QUEUE only when its run is abandoned (the
# worker died, or was stopped) and the task is to run again from the start.
_MOVES = {
    IN_QUEUE: frozenset({IN_PROGRESS, CANCELED}),
    IN_PROGRESS: frozenset({COMPLETED, FAILED, CANCELED, TIMED_OUT, IN_QUEUE}),
}
# The stage a status starts in; while IN_PROGRESS the kind moves through its own stages.
_STAGES = {
    IN_QUEUE: "queued",
    IN_PROGRESS: "validating",
    COMPLETED: "done",
    FAILED: "failed",
    CANCELED: "canceled",
    TIMED_OUT: "timed_out",
}
# A run is attempted at most this many times after the first when its worker keeps dying.
MAX_RERUNS = 2
# How long an Idempotency-Key is remembered.
IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000


class InvalidMove(Exception):
    """A move the task statuses do not allow (a bug in the caller, never a client's error)."""


def move(task: Task, status: str, now_ms: int, **changes: Any) -> Task:
    """`task` in `status`: the one place a task's status changes. Entering a final status
    ends the run (no worker, no lease) and stamps `finished_ms`; going back to the queue
    forgets the run's progress."""
    if status not in _MOVES.get(task.status, ()):
        raise InvalidMove(f"task {task.task_id}: {task.status} -> {status} is not allowed")
    fields: dict[str, Any] = {"status": status, "stage": _STAGES[status]}
    if status == IN_PROGRESS:
        fields |= {"started_ms": now_ms, "progress": 0.0}
    elif status == IN_QUEUE:
        fields |= {"worker_id": None, "lease_until_ms": None, "progress": 0.0}
    else:
        fields |= {"finished_ms": now_ms, "worker_id": None, "lease_until_ms": None}
    if status == COMPLETED:
        fields["progress"] = 1.0
    return _next_version(task, now_ms, fields | changes)


def update(task: Task, now_ms: int, **changes: Any) -> Task:
    """`task` with `changes` other than its status, as its next version."""
    if "status" in changes:
        raise InvalidMove("a status changes only through move()")
    return _next_version(task, now_ms, changes)


def _next_version(task: Task, now_ms: int, changes: dict[str, Any]) -> Task:
    return msgspec.structs.replace(task, updated_ms=now_ms, version=task.version + 1, **changes)


def new_task(
    task_id: str,
    owner_id: str,
    kind: str,
    params: dict[str, Any],
    now_ms: int,
    webhook: WebhookTarget | None = None,
    **fields: Any,
) -> Task:
    return Task(
        task_id=task_id,
        owner_id=owner_id,
        kind=kind,
        status=IN_QUEUE,
        stage=_STAGES[IN_QUEUE],
        created_ms=now_ms,
        updated_ms=now_ms,
        params=params,
        webhook=webhook,
        **fields,
    )


def delivery_for(task: Task, now_ms: int) -> Delivery | None:
    """The webhook a task owes once it is final (written in the same write as the status)."""
    if task.webhook is None or task.status not in FINAL:
        return None
    return Delivery(task.task_id, task.owner_id, task.webhook, now_ms)


async def submit(ctx: Context, task: Task, idempotency: IdempotencyKey | None) -> Task:
    """Queue `task`, or return the task an earlier submission with the same Idempotency-Key
    created. Raises QueueFull past the owner's queue limit, ValidationFailed when the key was
    used for a different request."""
    admission, stored = await ctx.store.add_task(
        task,
        idempotency,
        queue_limit=ctx.settings.queue_limit,
        remembered_since_ms=task.created_ms - IDEMPOTENCY_WINDOW_MS,
    )
    if admission is Admission.QUEUE_FULL:
        limit = ctx.settings.queue_limit
        raise QueueFull(
            f"You have {limit} {'task' if limit == 1 else 'tasks'} waiting, the most the queue "
            "holds; retry when one has started.",
            retry_after=10,
        )
    if admission is Admission.KEY_REUSED:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was used in the last 24 hours for a different request.",
            [{"field": "Idempotency-Key", "message": "already used for a different request"}],
        )
    return stored


async def owned_task(ctx: Context, owner_id: str, task_id: str, kind: str) -> Task:
    task = await ctx.store.get_task(task_id)
    if task is not None and task.kind != kind:
        task = None
    return require_owned(task, owner_id, "task", task_id)


async def queue_position(ctx: Context, task: Task) -> int | None:
    """1 for the next task to start; None once it has left the queue."""
    if task.status != IN_QUEUE:
        return None
    return await ctx.store.queue_position(task)


async def list_tasks(
    ctx: Context, owner_id: str, kind: str, page: PageRequest
) -> tuple[list[Task], str | None]:
    rows = await ctx.store.list_tasks(owner_id, kind, page)
    return next_cursor(rows, page.limit, lambda t: Position(t.created_ms, t.task_id))


class Discards(Protocol):
    """What cancelling needs of a task kind (see `task_runs.TaskKind`)."""

    name: str

    async def discard(self, ctx: Context, task: Task) -> None: ...


async def cancel(ctx: Context, owner_id: str, task_id: str, kind: Discards) -> Task:
    """CANCELED from either non-final status; again for a canceled task; TaskFinished for any
    other final status. A waiting task's leftovers go at once (`kind.discard`); a running
    one's worker notices within its heartbeat, stops, and discards them."""
    while True:
        task = await owned_task(ctx, owner_id, task_id, kind.name)
        if task.status == CANCELED:
            return task
        if task.status in FINAL:
            raise TaskFinished(
                f"Task {task_id} is already {task.status}; only a waiting or running task "
                "can be canceled."
            )
        now = ctx.clock.now_ms()
        canceled = move(task, CANCELED, now)
        if await ctx.store.save_task(canceled, task.version, delivery_for(canceled, now)):
            if task.status == IN_QUEUE:
                await kind.discard(ctx, canceled)
            return canceled
        # It changed meanwhile (it started, or ended): decide again on what it is now.


def not_found(task_id: str) -> NotFound:
    return NotFound(f"No task {echo(task_id)}.")
