"""Tasks and the idempotency keys of their submissions.

Every change to a task is a compare-and-set on its `version` (see `_save`): under READ
COMMITTED an UPDATE that waited for a concurrent one re-checks its WHERE against the committed
row, so exactly one of two racing writers wins. A claim takes the oldest queued task with
`FOR UPDATE SKIP LOCKED` (claimers on every node pass over rows another claim holds instead of
queueing behind it) and leases it in the same transaction.

Only what idle workers wait for is announced to other nodes: a task queued (or put back) and a
webhook owed. A NOTIFY serializes the commits of every transaction that sends one (PostgreSQL
takes a lock on its notification queue until the commit is flushed), so announcing every
heartbeat, claim and completion would cap the queue at one commit per disk flush."""

from __future__ import annotations

from collections.abc import Callable

from service.domain.models import Admission, Delivery, IdempotencyKey, Task, UsageRecord
from service.domain.pagination import PageRequest
from service.store.postgres.base import Conn, PostgresBase, after_clause, announce, fetch_one
from service.store.postgres.sessions import insert_usage
from service.store.rows import TASK_COLUMNS, dump_json, task_of, task_values

_COLUMNS = ", ".join(TASK_COLUMNS)
_SELECT = f"SELECT {_COLUMNS} FROM tasks"
# The first key of the advisory locks that serialize one owner's submissions (the queue limit
# and the Idempotency-Key check read what a concurrent submission is about to write).
_ADMISSION_LOCK = 0x7461736B  # "task"


async def _insert(conn: Conn, task: Task) -> None:
    marks = ", ".join(f"%({name})s" for name in TASK_COLUMNS)
    await conn.execute(f"INSERT INTO tasks ({_COLUMNS}) VALUES ({marks})", task_values(task))


async def _save(
    conn: Conn,
    task: Task,
    expected_version: int,
    delivery: Delivery | None,
    usage: UsageRecord | None,
) -> bool:
    """Write `task` if the stored row is still at `expected_version`; the outbox row and the
    usage record go in the same transaction, so a final status never lacks either."""
    assigns = ", ".join(f"{name} = %({name})s" for name in TASK_COLUMNS if name != "task_id")
    cursor = await conn.execute(
        f"UPDATE tasks SET {assigns} WHERE task_id = %(task_id)s AND version = %(expected)s",
        task_values(task) | {"expected": expected_version},
    )
    if cursor.rowcount != 1:
        return False
    if task.status == "IN_QUEUE":  # put back: idle workers on every node may take it
        await announce(conn, "tasks")
    if delivery is not None:
        await conn.execute(
            "INSERT INTO webhook_outbox (task_id, owner_id, target, created_ms)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (task_id) DO NOTHING",
            (delivery.task_id, delivery.owner_id, dump_json(delivery.target), delivery.created_ms),
        )
        await announce(conn, "deliveries")
    if usage is not None:
        await insert_usage(conn, usage)
    return True


async def _known_key(
    conn: Conn, task: Task, idempotency: IdempotencyKey, remembered_since_ms: int
) -> tuple[Admission, Task | None] | None:
    row = await fetch_one(
        conn,
        "SELECT fingerprint, task_id FROM idempotency_keys"
        " WHERE owner_id = %s AND key = %s AND created_ms >= %s",
        (task.owner_id, idempotency.key, remembered_since_ms),
    )
    if row is None:
        return None
    if row[0] != idempotency.fingerprint:
        return Admission.KEY_REUSED, None
    return Admission.REPEATED, task_of(
        await fetch_one(conn, f"{_SELECT} WHERE task_id = %s", (row[1],))
    )


async def _admit(
    conn: Conn,
    task: Task,
    idempotency: IdempotencyKey | None,
    queue_limit: int,
    remembered_since_ms: int,
) -> tuple[Admission, Task | None]:
    await conn.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_ADMISSION_LOCK, task.owner_id)
    )
    if idempotency is not None:
        known = await _known_key(conn, task, idempotency, remembered_since_ms)
        if known is not None:
            return known
    row = await fetch_one(
        conn,
        "SELECT count(*) FROM tasks WHERE owner_id = %s AND status = 'IN_QUEUE'",
        (task.owner_id,),
    )
    if row[0] >= queue_limit:
        return Admission.QUEUE_FULL, None
    await _insert(conn, task)
    if idempotency is not None:
        await conn.execute(
            "INSERT INTO idempotency_keys (owner_id, key, fingerprint, task_id, created_ms)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (owner_id, key) DO UPDATE SET"
            " fingerprint = excluded.fingerprint, task_id = excluded.task_id,"
            " created_ms = excluded.created_ms",
            (task.owner_id, idempotency.key, idempotency.fingerprint, task.task_id,
             task.created_ms),
        )  # fmt: skip
    await announce(conn, "tasks")
    return Admission.CREATED, task


async def _claim(
    conn: Conn,
    worker_id: str,
    lease_until_ms: int,
    start: Callable[[Task], Task],
    kinds: tuple[str, ...] | None,
) -> Task | None:
    """Lease the oldest queued task (of `kinds`, when given) to `worker_id` and start it with
    `start` (the domain's move to IN_PROGRESS), in one transaction."""
    of_kinds = "" if kinds is None else " AND kind = ANY(%(kinds)s)"
    row = await fetch_one(
        conn,
        "WITH next AS (SELECT task_id AS next_id FROM tasks WHERE status = 'IN_QUEUE'"
        f"{of_kinds} ORDER BY created_ms, task_id LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " UPDATE tasks SET worker_id = %(worker)s, lease_until_ms = %(lease)s FROM next"
        f" WHERE task_id = next_id RETURNING {_COLUMNS}",
        {"worker": worker_id, "lease": lease_until_ms, "kinds": list(kinds or ())},
    )
    if row is None:
        return None
    queued = task_of(row)
    started = start(queued)
    if not await _save(conn, started, queued.version, None, None):  # the row is locked: cannot be
        raise RuntimeError(f"claim of {queued.task_id} lost its own write")
    return started


async def _forget_keys(conn: Conn, before_ms: int) -> int:
    cursor = await conn.execute("DELETE FROM idempotency_keys WHERE created_ms < %s", (before_ms,))
    return cursor.rowcount


class TasksMixin(PostgresBase):
    async def add_task(
        self,
        task: Task,
        idempotency: IdempotencyKey | None,
        *,
        queue_limit: int,
        remembered_since_ms: int,
    ) -> tuple[Admission, Task | None]:
        admission = await self._write(_admit, task, idempotency, queue_limit, remembered_since_ms)
        if admission[0] is Admission.CREATED:
            self._task_changes.touch()
        return admission

    async def get_task(self, task_id: str) -> Task | None:
        return await self._one(f"{_SELECT} WHERE task_id = %s", (task_id,), task_of)

    async def list_tasks(self, owner_id: str, kind: str, page: PageRequest) -> list[Task]:
        cond, params = after_clause(page, "created_ms", "task_id")
        sql = (
            f"{_SELECT} WHERE owner_id = %s AND kind = %s{cond}"
            " ORDER BY created_ms DESC, task_id DESC LIMIT %s"
        )
        return await self._all(sql, [owner_id, kind, *params, page.limit + 1], task_of)

    async def queue_position(self, task: Task) -> int:
        count = await self._one(
            "SELECT count(*) FROM tasks WHERE status = 'IN_QUEUE'"
            " AND (created_ms, task_id) <= (%s, %s)",
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
        if delivery is None and usage is None and task.status != "IN_QUEUE":
            # One UPDATE and nothing else (a heartbeat, a claim's end): in autocommit, one
            # round trip instead of three.
            async with self._pool.connection() as conn:
                saved = await _save(conn, task, expected_version, None, None)
        else:
            saved = await self._write(_save, task, expected_version, delivery, usage)
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
        return await self._write(_claim, worker_id, lease_until_ms, start, kinds)

    async def tasks_in_progress(self, lease_before_ms: int, limit: int) -> list[Task]:
        sql = f"{_SELECT} WHERE status = 'IN_PROGRESS' AND lease_until_ms < %s LIMIT %s"
        return await self._all(sql, (lease_before_ms, limit), task_of)

    async def results_past(self, now_ms: int, limit: int) -> list[Task]:
        sql = (
            f"{_SELECT} WHERE readable_until_ms IS NOT NULL AND result_deleted_ms IS NULL"
            " AND readable_until_ms <= %s LIMIT %s"
        )
        return await self._all(sql, (now_ms, limit), task_of)

    async def known_task_ids(self, task_ids: list[str]) -> set[str]:
        sql = "SELECT task_id FROM tasks WHERE task_id = ANY(%s)"
        return set(await self._all(sql, (list(task_ids),), lambda row: row[0]))

    async def wait_for_tasks(self, timeout_s: float) -> None:
        await self._task_changes.wait(timeout_s)

    async def forget_idempotency_keys(self, before_ms: int) -> int:
        return await self._write(_forget_keys, before_ms)
