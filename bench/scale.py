"""Claim -> complete throughput of the task queue, on SQLite and on PostgreSQL.

    python -m bench.scale [--tasks 4000] [--claimers 1,4,16] [--rounds 3] [--no-pgbench]
    python -m bench.scale upscale ...   (one upscale single-pass against segmented on Dask:
                                         see bench/scale_upscale.py)

A cycle is what a task worker asks of the store for one task: `claim_task` of the oldest
queued task (its move to IN_PROGRESS in the same transaction) and `save_task` of its move to
COMPLETED. Each configuration queues `--tasks` tasks first, then starts N claimer processes
(each with its own store, as `serve`'s task workers have) that cycle until the queue is empty;
the figure is tasks / wall time from the start signal to the last completion. Default
durability on both: SQLite in WAL mode with synchronous=NORMAL (the store's setting),
PostgreSQL 15 from Debian started by this benchmark in a temporary directory with its default
settings (fsync and synchronous_commit on). The peer is pgbench running the same statements
on the same queue (bench/pgbench.py): the database's ceiling on this machine, in the same run.
Each cycle's CPU is counted too: the claimers' own (user + system) and, on PostgreSQL, the
server's (every postgres process of the cluster), so the table says whether the cycles are
bound by CPU on this machine and on which side. Rounds are interleaved over the
configurations; the table shows each configuration's median."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.pgbench import pgbench
from service.domain.models import Owner
from service.domain.tasks import COMPLETED, IN_PROGRESS, move, new_task
from tests.service.stack import PostgresCluster, postgres_bin

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


def _cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def _cycle(where: str, worker: str, ready, start) -> tuple[int, float]:
    """(cycles, CPU seconds) of one claimer from the start signal until the queue is empty."""
    store = await _open(where)
    done = 0
    try:
        ready.put(worker)
        await asyncio.to_thread(start.wait)
        began = _cpu_s()
        while True:
            now = int(time.time() * 1000)
            task = await store.claim_task(
                worker, now + LEASE_MS, lambda t, now=now: move(t, IN_PROGRESS, now)
            )
            if task is None:
                return done, _cpu_s() - began
            if not await store.save_task(move(task, COMPLETED, now), task.version):
                raise RuntimeError(f"{task.task_id} changed under its claimer")
            done += 1
    finally:
        await store.close()


def _claimer(where: str, worker: str, ready, start, results) -> None:
    results.put(asyncio.run(_cycle(where, worker, ready, start)))


def server_cpu_s(postmaster: int) -> float:
    """CPU seconds used so far by a PostgreSQL cluster: the postmaster, its live children
    (backends, WAL writer, checkpointer...) and the children that have exited."""
    tick = os.sysconf("SC_CLK_TCK")

    def times(pid: str, fields: slice) -> int:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # exited meanwhile: counted in the postmaster's cutime
            return 0
        return sum(int(value) for value in stat[fields])

    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    own = times(str(postmaster), slice(11, 15))  # utime, stime, cutime, cstime
    return (own + sum(times(pid, slice(11, 13)) for pid in children)) / tick


def measure(
    where: str, tasks: int, claimers: int, postmaster: int | None = None
) -> tuple[float, float, float]:
    """(cycles per second, client CPU µs per cycle, server CPU µs per cycle) of `claimers`
    processes emptying a queue of `tasks`."""
    asyncio.run(_queue(where, tasks))
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Queue(), context.Event(), context.Queue()
    processes = [
        context.Process(target=_claimer, args=(where, f"wrk_{n}", ready, start, results))
        for n in range(claimers)
    ]
    for process in processes:
        process.start()
    # The clock starts once every claimer has started and opened its store (16 processes
    # importing the service take seconds on a busy 2-CPU machine: not part of a cycle).
    for _ in processes:
        ready.get(timeout=300)
    server_began = server_cpu_s(postmaster) if postmaster else 0.0
    began = time.perf_counter()
    start.set()
    outcomes = [results.get(timeout=600) for _ in processes]
    took = time.perf_counter() - began
    for process in processes:
        process.join()
    server = server_cpu_s(postmaster) - server_began if postmaster else 0.0
    if sum(count for count, _ in outcomes) != tasks:
        raise RuntimeError(f"{sum(count for count, _ in outcomes)} cycles for {tasks} tasks")
    client = sum(cpu for _, cpu in outcomes)
    return tasks / took, client / tasks * 1e6, server / tasks * 1e6


def _one_round(cluster: PostgresCluster, work: str, args, claimers: int, label: str) -> dict:
    """Each configuration's (cycles/s, client µs, server µs) at `claimers`, in turn."""
    found = {}
    for backend in ("sqlite", "postgresql", "pgbench"):
        if backend == "pgbench" and not args.pgbench:
            continue
        if backend == "sqlite":
            found[backend] = measure(f"{work}/{label}.db", args.tasks, claimers)
            continue
        where = cluster.create_database()
        if backend == "postgresql":
            found[backend] = measure(where, args.tasks, claimers, cluster.process.pid)
            continue
        asyncio.run(_queue(where, args.tasks))
        schema = where.rsplit("%3D", 1)[1]  # the search path create_database put in the URL
        server_began, client_began = server_cpu_s(cluster.process.pid), _children_cpu_s()
        rate = pgbench(postgres_bin(), "127.0.0.1", cluster.port, cluster.password, schema,
                       args.tasks, claimers)  # fmt: skip
        client = (_children_cpu_s() - client_began) / args.tasks * 1e6
        found[backend] = (
            rate,
            client,
            (server_cpu_s(cluster.process.pid) - server_began) / args.tasks * 1e6,
        )
    return found


def _table(figures: dict, counts: list[int], with_pgbench: bool) -> None:
    def median(backend: str, claimers: int, at: int = 0) -> float:
        return statistics.median(round_[at] for round_ in figures[(backend, claimers)])

    head = "| claimers | SQLite | PostgreSQL | PG CPU µs/cycle (claimers + server) |"
    rule = "|---:|---:|---:|---:|"
    if with_pgbench:
        head += " pgbench, same SQL | its CPU µs/cycle | PostgreSQL / pgbench |"
        rule += "---:|---:|---:|"
    print(f"{head}\n{rule}")
    for claimers in counts:
        client, server = median("postgresql", claimers, 1), median("postgresql", claimers, 2)
        row = (
            f"| {claimers} | {median('sqlite', claimers):,.0f} |"
            f" {median('postgresql', claimers):,.0f} | {client:,.0f} + {server:,.0f} |"
        )
        if with_pgbench:
            ours, peers = figures[("postgresql", claimers)], figures[("pgbench", claimers)]
            pairs = zip(ours, peers, strict=True)
            ratio = statistics.median(mine[0] / peer[0] for mine, peer in pairs)
            peer_cpu = (
                f"{median('pgbench', claimers, 1):,.0f} + {median('pgbench', claimers, 2):,.0f}"
            )
            row += f" {median('pgbench', claimers):,.0f} | {peer_cpu} | {ratio:.2f} |"
        print(row)


def main() -> None:
    if sys.argv[1:2] == ["upscale"]:
        from bench.scale_upscale import main as upscale

        return upscale(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--claimers", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pgbench", dest="pgbench", action="store_false")
    args = parser.parse_args()
    counts = [int(n) for n in args.claimers.split(",")]
    print(f"load average at the start: {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    cluster = PostgresCluster(durable=True)
    figures: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    try:
        with tempfile.TemporaryDirectory() as work:
            for round_ in range(args.rounds):
                for claimers in counts:
                    label = f"r{round_}-{claimers}"
                    for backend, found in _one_round(cluster, work, args, claimers, label).items():
                        figures.setdefault((backend, claimers), []).append(found)
                        print(f"round {round_ + 1}: {backend:<10} {claimers:>2} claimers "
                              f"{found[0]:8.0f} cycles/s, CPU µs/cycle {found[1]:.0f} + "
                              f"{found[2]:.0f}", file=sys.stderr)  # fmt: skip
    finally:
        cluster.stop()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"\n{args.tasks} tasks, median of {args.rounds} interleaved rounds, cycles per second")
    _table(figures, counts, args.pgbench)


if __name__ == "__main__":
    main()
