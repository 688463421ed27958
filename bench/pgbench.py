"""The peer of `bench.scale`'s PostgreSQL cycles: the same statements sent by pgbench (C, one
thread per client, prepared statements) on the same schema and queue, so the database's own
ceiling on this machine is measured in the same run as ours.

One pgbench transaction is one cycle as the store runs it: BEGIN; the claim's SELECT ... FOR
UPDATE SKIP LOCKED of the oldest queued task; the UPDATE that leases and starts it (every
column, compare-and-set on the version); COMMIT; then the autocommit UPDATE that completes it.
Task ids are `tsk_%07d` (what bench.scale queues), so pgbench carries the number."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from service.store.rows import TASK_COLUMNS

_SET_STARTED = {
    "status": "'IN_PROGRESS'", "stage": "'running'", "version": ":v + 1", "progress": "0",
    "updated_ms": "2", "started_ms": "2", "worker_id": "'wrk'", "lease_until_ms": "60002",
}  # fmt: skip
_SET_COMPLETED = {
    "status": "'COMPLETED'", "stage": "'done'", "version": ":v + 2", "progress": "1",
    "updated_ms": "3", "finished_ms": "3", "worker_id": "NULL", "lease_until_ms": "NULL",
}  # fmt: skip
_ID = "'tsk_' || lpad(:n::text, 7, '0')"


def _update(changes: dict[str, str], version: str) -> str:
    # Every column is written, as the store's compare-and-set does (unchanged ones to themselves).
    assigns = ", ".join(
        f"{name} = {changes.get(name, name)}" for name in TASK_COLUMNS if name != "task_id"
    )
    return f"UPDATE tasks SET {assigns} WHERE task_id = {_ID} AND version = {version};"


SCRIPT = "\n".join(
    [
        "BEGIN;",
        "SELECT substr(task_id, 5)::int AS n, version AS v FROM tasks WHERE status = 'IN_QUEUE'"
        " ORDER BY created_ms, task_id LIMIT 1 FOR UPDATE SKIP LOCKED \\gset",
        _update(_SET_STARTED, ":v"),
        "COMMIT;",
        _update(_SET_COMPLETED, ":v + 1"),
    ]
)


def pgbench(bindir: Path, host: str, port: int, password: str, schema: str, tasks: int,
            clients: int) -> float:  # fmt: skip
    """Cycles per second of `clients` pgbench clients emptying the queue of `tasks` in
    `schema` (each client runs tasks / clients cycles: the queue must hold exactly that)."""
    if tasks % clients:
        raise ValueError(f"{tasks} tasks do not split evenly over {clients} clients")
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
        script.write(SCRIPT + "\n")
        script.flush()
        command = [
            str(bindir / "pgbench"), "-h", host, "-p", str(port), "-U", "avatar", "-n",
            "-M", "prepared", "-f", script.name, "-c", str(clients), "-j", str(clients),
            "-t", str(tasks // clients), "postgres",
        ]  # fmt: skip
        env = os.environ | {"PGPASSWORD": password, "PGOPTIONS": f"-c search_path={schema}"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"tps = ([0-9.]+)", done.stdout)
    processed = re.search(r"actually processed: (\d+)/", done.stdout)
    if done.returncode != 0 or found is None or int(processed.group(1)) != tasks:
        raise RuntimeError(f"pgbench failed:\n{done.stdout}\n{done.stderr}")
    return float(found.group(1))
