"""Many live conversations at once against one `avatar-service serve` (offline responder).

    python -m bench.conversations [--sockets 200] [--duration 20] [--rate 1.0] [--rounds 1]

Starts `serve` (1 HTTP worker, defaults but the socket caps, raised to `--sockets`: every
visitor here comes from one address) on a free loopback port, publishes an agent through a
route, opens `--sockets` conversation sockets at once and has each send a message every
1/`--rate` seconds (at a random phase, seeded) for `--duration` seconds, waiting for each reply
before the next send. It reports the messages answered per second, the latency from a send to
the reply's first delta frame (p50, p99, max), errors, and the resident memory of the serve
process tree (and of the HTTP worker alone) before and at the end. The client runs in this
process on the same machine, so the two share its CPUs."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import websockets

from bench.server import Server, api_call, memory_kib, process_tree, running_serve


@dataclass
class Tally:
    first_delta_ms: list[float] = field(default_factory=list)
    replies: int = 0
    errors: list[str] = field(default_factory=list)


async def _converse(url: str, args: argparse.Namespace, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    async with websockets.connect(url, max_queue=None) as ws:
        await _until(ws, "message")  # ready, then the greeting
        period = 1.0 / args.rate
        next_send = time.perf_counter() + rng.uniform(0, period)
        stop_at = time.perf_counter() + args.duration
        while next_send < stop_at:
            await asyncio.sleep(max(0.0, next_send - time.perf_counter()))
            sent = time.perf_counter()
            await ws.send(json.dumps({"type": "message", "text": f"hello {rng.random():.6f}"}))
            frame = await _until(ws, "delta", "error")
            if frame["type"] == "error":
                tally.errors.append(frame["message"])
            else:
                tally.first_delta_ms.append((time.perf_counter() - sent) * 1000)
                await _until(ws, "message")
                tally.replies += 1
            next_send += period


async def _until(ws, *types: str) -> dict:
    while (frame := json.loads(await ws.recv()))["type"] not in types:
        pass
    return frame


@dataclass(frozen=True)
class Memory:
    tree_mib: float
    http_worker_mib: float


def _memory(server: Server) -> Memory:
    pids = process_tree(server.process.pid)
    total = sum(memory_kib(pid) for pid in pids)
    # The HTTP worker is the Granian worker: the largest process of the tree.
    worker = max(memory_kib(pid) for pid in pids)
    return Memory(total / 1024, worker / 1024)


async def _peak_memory(server: Server, peak: list[Memory]) -> None:
    while True:
        now = _memory(server)
        if not peak or now.tree_mib > peak[0].tree_mib:
            peak[:] = [now]
        await asyncio.sleep(0.5)


async def _round(
    server: Server, url: str, args: argparse.Namespace, seed: int
) -> tuple[Tally, float, Memory]:
    tally, peak = Tally(), []
    sampler = asyncio.ensure_future(_peak_memory(server, peak))
    started = time.perf_counter()
    results = await asyncio.gather(
        *(_converse(url, args, seed * 10_000 + n, tally) for n in range(args.sockets)),
        return_exceptions=True,
    )
    wall = time.perf_counter() - started
    sampler.cancel()
    tally.errors += [repr(r) for r in results if isinstance(r, BaseException)]
    return tally, wall, peak[0]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _report(args: argparse.Namespace, rounds: list, before: Memory) -> None:
    print(
        f"{args.sockets} sockets, one message every {1 / args.rate:g} s each, "
        f"{args.duration:g} s per round, {len(rounds)} round(s); offline responder, 1 HTTP worker"
    )
    header = (
        f"{'round':>5} {'replies/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}"
    )
    print(header)
    print("-" * len(header))
    p99s = []
    for index, (tally, wall, _) in enumerate(rounds, 1):
        lat = tally.first_delta_ms
        p99s.append(_percentile(lat, 0.99))
        print(
            f"{index:>5} {tally.replies / wall:>10.1f} {_percentile(lat, 0.5):>8.2f} "
            f"{p99s[-1]:>8.2f} {max(lat, default=0):>8.2f} {len(tally.errors):>7}"
        )
        for error in sorted(set(tally.errors))[:3]:
            print(f"      error: {error}")
    print(f"median p99 first-delta latency: {statistics.median(p99s):.2f} ms (bar: < 50 ms)")
    peak = max((memory for _, _, memory in rounds), key=lambda m: m.tree_mib)
    print(
        f"serve RSS: {before.tree_mib:.0f} MiB in all (HTTP worker {before.http_worker_mib:.0f} "
        f"MiB) before; peak {peak.tree_mib:.0f} MiB in all (HTTP worker "
        f"{peak.http_worker_mib:.0f} MiB) with the sockets open"
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.conversations", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sockets", type=int, default=200, help="concurrent sockets (200)")
    parser.add_argument("--duration", type=float, default=20, help="seconds per round (20)")
    parser.add_argument("--rate", type=float, default=1.0, help="messages/s per socket (1)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (1)")
    return parser.parse_args(argv)


def _uncapped(sockets: int) -> dict[str, str]:
    caps = ("AVATAR_MAX_SOCKETS_PER_CLIENT", "AVATAR_MAX_CONVERSATIONS_PER_ROUTE")
    return {name: str(max(sockets, 1)) for name in caps}


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    with (
        tempfile.TemporaryDirectory(prefix="bench-conversations-") as work,
        running_serve(Path(work), _uncapped(args.sockets)) as (server, key),
    ):
        agent = {"name": "B", "greeting": "Hi"}
        agent_id = api_call(server.base, key, "POST", "/v1/agents", agent)["agent_id"]
        route = api_call(server.base, key, "POST", f"/v1/agents/{agent_id}/routes", {})
        url = f"ws://127.0.0.1:{server.port}/r/{route['id']}/ws"
        before = _memory(server)
        rounds = [asyncio.run(_round(server, url, args, seed)) for seed in range(args.rounds)]
    _report(args, rounds, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
