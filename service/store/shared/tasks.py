"""Tasks and the idempotency keys of their submissions, for both databases.

Every change to a task is a compare-and-set on its `version` (see `_save`): SQLite's writes
run one at a time; under PostgreSQL's READ COMMITTED an UPDATE that waited for a concurrent
one re-checks its WHERE against the committed row, so exactly one of two racing writers wins.
A claim takes the oldest queued task (`FOR UPDATE SKIP LOCKED` on PostgreSQL: claimers on
every node pass over rows another claim holds instead of queueing behind it) and leases and
starts it in the same transaction.

Only what idle workers wait for is announced to other nodes: a task queued (or put back) and a
webhook owed. A NOTIFY serializes the commits of every transaction that sends one (PostgreSQL
takes a lock on its notification queue until the commit is flushed), so announcing every
heartbeat, claim and completion would cap the queue at one commit per disk flush."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from service.domain.models import Admission, Delivery, IdempotencyKey, Task, UsageRecord
from service.domain.pagination import PageRequest
from service.store.rows import TASK_COLUMNS, dump_json, task_of, task_values
from service.store.shared.base import SharedBase, after_clause
from service.store.shared.sessions import insert_usage
from service.store.shared.steps import Announce, Body, Query, Serialize, insert, marks

_SELECT = f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks"
_INSERT = insert("tasks", TASK_COLUMNS)
_CHANGED = [name for name in TASK_COLUMNS if name != "task_id"]
_UPDATE = (
    f"UPDATE tasks SET {', '.join(f'{name} = ?' for name in _CHANGED)}"
    " WHERE task_id = ? AND version = ?"
)
# The first key of the advisory locks that serialize one owner's submissions (the queue limit
# and the Idempotency-Key check read what a concurrent submission is about to write).
_ADMISSION_LOCK = 0x7461736B  # "task"


def _update(task: Task, expected_version: int, **options) -> Query:
    values = task_values(task)
    params = [values[name] for name in _CHANGED] + [task.task_id, expected_version]
    return Query(_UPDATE, params, **options)


def _save(
    task: Task, expected_version: int, delivery: Delivery | None, usage: UsageRecord | None
) -> Body[bool]:
    """Write `task` if the stored row is still at `expected_version`; the outbox row and the
    usage record go in the same transaction, so a final status never lacks either."""
    written = yield _update(task, expected_version)
    if written.rowcount != 1:
        return False
    if task.status == "IN_QUEUE":  # put back: idle workers on every node may take it
        yield Announce("tasks")
    if delivery is not None:
        yield Query(
            "INSERT INTO webhook_outbox (task_id, owner_id, target, created_ms)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (task_id) DO NOTHING",
            (delivery.task_id, delivery.owner_id, dump_json(delivery.target), delivery.created_ms),
            wait=False,
        )
        yield Announce("deliveries")
    if usage is not None:
        yield insert_usage(usage)
    return True


def _known_key(
    task: Task, idempotency: IdempotencyKey, remembered_since_ms: int
) -> Body[tuple[Admission, Task | None] | None]:
    found = yield Query(
        "SELECT fingerprint, task_id FROM idempotency_keys"
        " WHERE owner_id = ? AND key = ? AND created_ms >= ?",
        (task.owner_id, idempotency.key, remembered_since_ms),
    )
    row = found.first()
    if row is None:
        return None
    if row[0] != idempotency.fingerprint:
        return Admission.KEY_REUSED, None
    first = yield Query(f"{_SELECT} WHERE task_id = ?", (row[1],))
    return Admission.REPEATED, task_of(first.first())


def _admit(
    task: Task,
    idempotency: IdempotencyKey | None,
    queue_limit: int,
    remembered_since_ms: int,
) -> Body[tuple[Admission, Task | None]]:
    yield Serialize(_ADMISSION_LOCK, task.owner_id)
    if idempotency is not None:
        known = yield from _known_key(task, idempotency, remembered_since_ms)
        if known is not None:
            return known
    queued = yield Query(
        "SELECT count(*) FROM tasks WHERE owner_id = ? AND status = 'IN_QUEUE'", (task.owner_id,)
    )
    if queued.first()[0] >= queue_limit:
        return Admission.QUEUE_FULL, None
    values = task_values(task)
    yield Query(_INSERT, [values[name] for name in TASK_COLUMNS], wait=False)
    if idempotency is not None:
        yield Query(
            "INSERT INTO idempotency_keys (owner_id, key, fingerprint, task_id, created_ms)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner_id, key) DO UPDATE SET"
            " fingerprint = excluded.fingerprint, task_id = excluded.task_id,"
            " created_ms = excluded.created_ms",
            (task.owner_id, idempotency.key, idempotency.fingerprint, task.task_id,
             task.created_ms),
            wait=False,
        )  # fmt: skip
    yield Announce("tasks")
    return Admission.CREATED, task


def _claim(
    worker_id: str,
    lease_until_ms: int,
    start: Callable[[Task], Task],
    kinds: tuple[str, ...] | None,
) -> Body[Task | None]:
    """Lease the oldest queued task (of `kinds`, when given) to `worker_id` and start it with
    `start` (the domain's move to IN_PROGRESS), in one transaction. The row stays locked from
    the SELECT to the commit, so the start's write cannot miss."""
    of_kinds = "" if kinds is None else f" AND kind IN ({marks(len(kinds))})"
    found = yield Query(
        f"{_SELECT} WHERE status = 'IN_QUEUE'{of_kinds}"
        " ORDER BY created_ms, task_id LIMIT 1 FOR UPDATE SKIP LOCKED",
        kinds or (),
    )
    if not found.rows:
        return None
    queued = task_of(found.first())
    leased = msgspec.structs.replace(queued, worker_id=worker_id, lease_until_ms=lease_until_ms)
    started = start(leased)
    yield _update(started, queued.version, wait=False, expect=1)
    return started


def _forget_keys(before_ms: int) -> Body[int]:
    done = yield Query("DELETE FROM idempotency_keys WHERE created_ms < ?", (before_ms,))
    return done.rowcount


class TasksMixin(SharedBase):
    async def add_task(
        self,
        task: Task,
        idempotency: IdempotencyKey | None,
        *,
        queue_limit: int,
        remembered_since_ms: int,
    ) -> tuple[Admission, Task | None]:
        admission = await self._run(_admit(task, idempotency, queue_limit, remembered_since_ms))
        if admission[0] is Admission.CREATED:
            self._task_changes.touch()
        return admission

    async def get_task(self, task_id: str) -> Task | None:
        return await self._read_one(f"{_SELECT} WHERE task_id = ?", (task_id,), task_of)

    async def list_tasks(self, owner_id: str, kind: str, page: PageRequest) -> list[Task]:
        cond, params = after_clause(page, "created_ms", "task_id")
        sql = (
            f"{_SELECT} WHERE owner_id = ? AND kind = ?{cond}"
            " ORDER BY created_ms DESC, task_id DESC LIMIT ?"
        )
        return await self._read_all(sql, [owner_id, kind, *params, page.limit + 1], task_of)

    async def queue_position(self, task: Task) -> int:
        count = await self._read_one(
            "SELECT count(*) FROM tasks WHERE status = 'IN_QUEUE'"
            " AND (created_ms, task_id) <= (?, ?)",
            (task.created_ms, task.task_id),
            lambda row: row[0],
        )
        return max(1, count)

    async def save_task(
        self,
        task: Task,
        expected_version: int,
        delivery: Delivery | None = None,
        usage: UsageRecord | None = None,
    ) -> bool:
        # One UPDATE and nothing else (a heartbeat, a claim's end) needs no BEGIN and COMMIT.
        alone = delivery is None and usage is None and task.status != "IN_QUEUE"
        saved = await self._run(_save(task, expected_version, delivery, usage), atomic=not alone)
        if saved:
            self._task_changes.touch()
            if delivery is not None:
                self._delivery_changes.touch()
        return saved

    async def claim_task(
        self,
        worker_id: str,
        lease_until_ms: int,
        start: Callable[[Task], Task],
        kinds: tuple[str, ...] | None = None,
    ) -> Task | None:
        return await self._run(_claim(worker_id, lease_until_ms, start, kinds))

    async def tasks_in_progress(self, lease_before_ms: int, limit: int) -> list[Task]:
        sql = f"{_SELECT} WHERE status = 'IN_PROGRESS' AND lease_until_ms < ? LIMIT ?"
        return await self._read_all(sql, (lease_before_ms, limit), task_of)

    async def results_past(self, now_ms: int, limit: int) -> list[Task]:
        sql = (
            f"{_SELECT} WHERE readable_until_ms IS NOT NULL AND result_deleted_ms IS NULL"
            " AND readable_until_ms <= ? LIMIT ?"
        )
        return await self._read_all(sql, (now_ms, limit), task_of)

    async def known_task_ids(self, task_ids: list[str]) -> set[str]:
        if not task_ids:
            return set()
        sql = f"SELECT task_id FROM tasks WHERE task_id IN ({marks(len(task_ids))})"
        return set(await self._read_all(sql, list(task_ids), lambda row: row[0]))

    async def wait_for_tasks(self, timeout_s: float) -> None:
        await self._task_changes.wait(timeout_s)

    async def forget_idempotency_keys(self, before_ms: int) -> int:
        return await self._run(_forget_keys(before_ms))
