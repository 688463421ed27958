"""Claim -> complete throughput of the task queue, on SQLite and on PostgreSQL.

    python -m bench.scale [--tasks 4000] [--claimers 1,4,16] [--rounds 3]
    python -m bench.scale upscale ...   (one upscale single-pass against segmented on Dask:
                                         see bench/scale_upscale.py)

A cycle is what a task worker asks of the store for one task: `claim_task` of the oldest
queued task (its move to IN_PROGRESS in the same transaction) and `save_task` of its move to
COMPLETED. Each configuration queues `--tasks` tasks first, then starts N claimer processes
(each with its own store, as `serve`'s task workers have) that cycle until the queue is empty;
the figure is tasks / wall time from the start signal to the last completion. Default
durability on both: SQLite in WAL mode with synchronous=NORMAL (the store's setting),
PostgreSQL 15 from Debian started by this benchmark in a temporary directory with its default
settings (fsync and synchronous_commit on). Rounds are interleaved over the configurations;
the table shows each configuration's median."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

from service.domain.models import Owner
from service.domain.tasks import COMPLETED, IN_PROGRESS, move, new_task
from tests.service.stack import PostgresCluster

LEASE_MS = 60_000


async def _open(where: str):
    if where.startswith("postgresql://"):
        from service.store.postgres import open_postgres

        return await open_postgres(where)
    from service.store.sqlite import SqliteStore

    return SqliteStore(Path(where), 0)


async def _queue(where: str, count: int) -> None:
    store = await _open(where)
    try:
        await store.add_owner(Owner("own_bench", "bench", 0))
        for n in range(count):
            task = new_task(f"tsk_{n:07d}", "own_bench", "upscale", {}, n)
            await store.add_task(task, None, queue_limit=count + 1, remembered_since_ms=0)
    finally:
        await store.close()


async def _cycle(where: str, worker: str, start: multiprocessing.Event) -> int:
    store = await _open(where)
    done = 0
    try:
        await asyncio.to_thread(start.wait)
        while True:
            now = int(time.time() * 1000)
            task = await store.claim_task(
                worker, now + LEASE_MS, lambda t, now=now: move(t, IN_PROGRESS, now)
            )
            if task is None:
                return done
            if not await store.save_task(move(task, COMPLETED, now), task.version):
                raise RuntimeError(f"{task.task_id} changed under its claimer")
            done += 1
    finally:
        await store.close()


def _claimer(where: str, worker: str, start, results) -> None:
    results.put(asyncio.run(_cycle(where, worker, start)))


def measure(where: str, tasks: int, claimers: int) -> float:
    """Cycles per second of `claimers` processes emptying a queue of `tasks`."""
    asyncio.run(_queue(where, tasks))
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    processes = [
        context.Process(target=_claimer, args=(where, f"wrk_{n}", start, results))
        for n in range(claimers)
    ]
    for process in processes:
        process.start()
    time.sleep(2.0)  # every claimer has opened its store and waits for the signal
    began = time.perf_counter()
    start.set()
    counts = [results.get(timeout=600) for _ in processes]
    took = time.perf_counter() - began
    for process in processes:
        process.join()
    if sum(counts) != tasks:
        raise RuntimeError(f"{sum(counts)} cycles for {tasks} tasks")
    return tasks / took


def main() -> None:
    if sys.argv[1:2] == ["upscale"]:
        from bench.scale_upscale import main as upscale

        return upscale(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--claimers", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    counts = [int(n) for n in args.claimers.split(",")]
    cluster = PostgresCluster(durable=True)
    figures: dict[tuple[str, int], list[float]] = {}
    try:
        with tempfile.TemporaryDirectory() as work:
            for round_ in range(args.rounds):
                for claimers in counts:
                    for backend in ("sqlite", "postgresql"):
                        where = (
                            cluster.create_database()
                            if backend == "postgresql"
                            else f"{work}/r{round_}-{claimers}.db"
                        )
                        rate = measure(where, args.tasks, claimers)
                        figures.setdefault((backend, claimers), []).append(rate)
                        print(f"round {round_ + 1}: {backend:<10} {claimers:>2} claimers "
                              f"{rate:8.0f} cycles/s", file=sys.stderr)  # fmt: skip
    finally:
        cluster.stop()
    print(f"\n{args.tasks} tasks, median of {args.rounds} interleaved rounds, cycles per second")
    print("| claimers | SQLite | PostgreSQL |\n|---:|---:|---:|")
    for claimers in counts:
        cells = [statistics.median(figures[(b, claimers)]) for b in ("sqlite", "postgresql")]
        print(f"| {claimers} | {cells[0]:,.0f} | {cells[1]:,.0f} |")


if __name__ == "__main__":
    main()
