"""Tasks and the idempotency keys of their submissions.

Every change to a task is a compare-and-set on its `version` (see `_save`), made in the writer's
BEGIN IMMEDIATE transaction; a claim picks the oldest queued task and leases it in the same
transaction (`UPDATE ... RETURNING`), so two workers never claim one task."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from service.domain.models import Admission, Delivery, IdempotencyKey, Task, UsageRecord
from service.domain.pagination import PageRequest
from service.store.rows import TASK_COLUMNS, dump_json, task_of, task_values
from service.store.sqlite.base import SqliteBase, after_clause
from service.store.sqlite.sessions import insert_usage

_SELECT = f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks"
_RETURNING = f"RETURNING {', '.join(TASK_COLUMNS)}"


def _insert(conn: sqlite3.Connection, task: Task) -> None:
    names = ", ".join(TASK_COLUMNS)
    marks = ", ".join(f":{name}" for name in TASK_COLUMNS)
    conn.execute(f"INSERT INTO tasks ({names}) VALUES ({marks})", task_values(task))


def _save(
    conn: sqlite3.Connection,
    task: Task,
    expected_version: int,
    delivery: Delivery | None,
    usage: UsageRecord | None,
) -> bool:
    """Write `task` if the stored row is still at `expected_version`; the outbox row and the
    usage record go in the same transaction, so a final status never lacks either."""
    assigns = ", ".join(f"{name} = :{name}" for name in TASK_COLUMNS if name != "task_id")
    cursor = conn.execute(
        f"UPDATE tasks SET {assigns} WHERE task_id = :task_id AND version = :expected",
        task_values(task) | {"expected": expected_version},
    )
    if cursor.rowcount != 1:
        return False
    if delivery is not None:
        conn.execute(
            "INSERT OR IGNORE INTO webhook_outbox (task_id, owner_id, target, created_ms)"
            " VALUES (?, ?, ?, ?)",
            (delivery.task_id, delivery.owner_id, dump_json(delivery.target), delivery.created_ms),
        )
    if usage is not None:
        insert_usage(conn, usage)
    return True


def _admit(
    conn: sqlite3.Connection,
    task: Task,
    idempotency: IdempotencyKey | None,
    queue_limit: int,
    remembered_since_ms: int,
) -> tuple[Admission, Task | None]:
    if idempotency is not None:
        row = conn.execute(
            "SELECT fingerprint, task_id FROM idempotency_keys"
            " WHERE owner_id = ? AND key = ? AND created_ms >= ?",
            (task.owner_id, idempotency.key, remembered_since_ms),
        ).fetchone()
        if row is not None:
            if row[0] != idempotency.fingerprint:
                return Admission.KEY_REUSED, None
            return Admission.REPEATED, task_of(
                conn.execute(f"{_SELECT} WHERE task_id = ?", (row[1],)).fetchone()
            )
    queued = conn.execute(
        "SELECT count(*) FROM tasks WHERE owner_id = ? AND status = 'IN_QUEUE'", (task.owner_id,)
    ).fetchone()[0]
    if queued >= queue_limit:
        return Admission.QUEUE_FULL, None
    _insert(conn, task)
    if idempotency is not None:
        conn.execute(
            "INSERT OR REPLACE INTO idempotency_keys"
            " (owner_id, key, fingerprint, task_id, created_ms) VALUES (?, ?, ?, ?, ?)",
            (task.owner_id, idempotency.key, idempotency.fingerprint, task.task_id,
             task.created_ms),
        )  # fmt: skip
    return Admission.CREATED, task


def _claim(
    conn: sqlite3.Connection,
    worker_id: str,
    lease_until_ms: int,
    start: Callable[[Task], Task],
    kinds: tuple[str, ...] | None,
) -> Task | None:
    """Lease the oldest queued task (of `kinds`, when given) to `worker_id` and start it with
    `start` (the domain's move to IN_PROGRESS), in one transaction."""
    of_kinds = "" if kinds is None else f" AND kind IN ({', '.join('?' * len(kinds))})"
    row = conn.execute(
        "UPDATE tasks SET worker_id = ?, lease_until_ms = ? WHERE task_id = ("
        f" SELECT task_id FROM tasks WHERE status = 'IN_QUEUE'{of_kinds}"
        " ORDER BY created_ms, task_id LIMIT 1"
        f") {_RETURNING}",
        (worker_id, lease_until_ms, *(kinds or ())),
    ).fetchone()
    if row is None:
        return None
    queued = task_of(row)
    started = start(queued)
    if not _save(conn, started, queued.version, None, None):  # cannot happen in this transaction
        raise RuntimeError(f"claim of {queued.task_id} lost its own write")
    return started


def _forget_keys(conn: sqlite3.Connection, before_ms: int) -> int:
    return conn.execute("DELETE FROM idempotency_keys WHERE created_ms < ?", (before_ms,)).rowcount


class TasksMixin(SqliteBase):
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
        return self._one(f"{_SELECT} WHERE task_id = ?", (task_id,), task_of)

    async def list_tasks(self, owner_id: str, kind: str, page: PageRequest) -> list[Task]:
        cond, params = after_clause(page, "created_ms", "task_id")
        sql = (
            f"{_SELECT} WHERE owner_id = ? AND kind = ?{cond}"
            " ORDER BY created_ms DESC, task_id DESC LIMIT ?"
        )
        return self._all(sql, [owner_id, kind, *params, page.limit + 1], task_of)

    async def queue_position(self, task: Task) -> int:
        row = self._reader.execute(
            "SELECT count(*) FROM tasks WHERE status = 'IN_QUEUE'"
            " AND (created_ms, task_id) <= (?, ?)",
            (task.created_ms, task.task_id),
        ).fetchone()
        return max(1, row[0])

    async def save_task(
        self,
        task: Task,
        expected_version: int,
        delivery: Delivery | None = None,
        usage: UsageRecord | None = None,
    ) -> bool:
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
        sql = f"{_SELECT} WHERE status = 'IN_PROGRESS' AND lease_until_ms < ? LIMIT ?"
        return self._all(sql, (lease_before_ms, limit), task_of)

    async def results_past(self, now_ms: int, limit: int) -> list[Task]:
        sql = (
            f"{_SELECT} WHERE readable_until_ms IS NOT NULL AND result_deleted_ms IS NULL"
            " AND readable_until_ms <= ? LIMIT ?"
        )
        return self._all(sql, (now_ms, limit), task_of)

    async def known_task_ids(self, task_ids: list[str]) -> set[str]:
        marks = ", ".join("?" * len(task_ids))
        rows = self._reader.execute(
            f"SELECT task_id FROM tasks WHERE task_id IN ({marks})", task_ids
        ).fetchall()
        return {row[0] for row in rows}

    async def wait_for_tasks(self, timeout_s: float) -> None:
        await self._task_changes.wait(timeout_s)

    async def forget_idempotency_keys(self, before_ms: int) -> int:
        return await self._write(_forget_keys, before_ms)
