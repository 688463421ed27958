"""HTTP benchmark of one `avatar-service serve` process, driven by wrk.

    python -m bench.service [--duration 10] [--connections 16] [--threads 1] [--rounds 1]

Starts `serve` on a free loopback port with a temporary data dir and default settings except
the per-key rate limit (raised so that wrk measures the handlers, not the limiter), creates an
agent and a route with the printed API key, then runs wrk against three endpoints and prints
requests/s with p50/p99 latency. With several rounds the endpoints are interleaved and the
median of each figure is reported. wrk comes from Debian's package (`apt-get install wrk`)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.server import Server, api_call, running_serve

RATE_LIMIT = "1000000"

# Reports wrk's own statistics as one JSON line (latencies in microseconds).
_LUA = """
wrk.method = %(method)s
wrk.body = %(body)s
%(headers)s
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %%d, "duration_us": %%d, "non_2xx": %%d, "socket_errors": %%d, '
    .. '"p50_us": %%d, "p99_us": %%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass(frozen=True)
class Target:
    name: str
    method: str
    path: str
    body: str | None = None
    auth: bool = True
    bar: str = ""


@dataclass(frozen=True)
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int


def _targets(base: str, key: str) -> list[Target]:
    agent = api_call(base, key, "POST", "/v1/agents", {"name": "Bench", "greeting": "Hello!"})
    route = api_call(base, key, "POST", f"/v1/agents/{agent['agent_id']}/routes", {"label": "b"})
    return [
        Target(
            "GET /v1/agent-routes/{id}", "GET", f"/v1/agent-routes/{route['id']}",
            bar="bar: >= 3,000 req/s and p99 < 20 ms",
        ),
        Target(
            "POST /v1/agents/{id}/routes", "POST", f"/v1/agents/{agent['agent_id']}/routes",
            body='{"label": "bench"}', bar="bar: >= 1,000 req/s",
        ),
        Target("GET /r/{id}", "GET", f"/r/{route['id']}", auth=False),
        # The same-run peer: the framework and server floor (no key, no store read).
        Target("GET /healthz (peer)", "GET", "/healthz", auth=False),
    ]  # fmt: skip


def _lua(target: Target, key: str) -> str:
    headers = ['wrk.headers["Content-Type"] = "application/json"'] if target.body else []
    if target.auth:
        headers.append(f'wrk.headers["Authorization"] = "Bearer {key}"')
    return _LUA % {
        "method": json.dumps(target.method),
        "body": "nil" if target.body is None else json.dumps(target.body),
        "headers": "\n".join(headers),
    }


def _run_wrk(args: argparse.Namespace, url: str, script: Path, duration: int) -> Result:
    command = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{duration}s"]
    command += ["-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next((x for x in output.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no statistics:\n{output}")
    stats = json.loads(line.removeprefix("BENCH "))
    return Result(
        rps=stats["requests"] / (stats["duration_us"] / 1e6),
        p50_ms=stats["p50_us"] / 1000,
        p99_ms=stats["p99_us"] / 1000,
        non_2xx=stats["non_2xx"],
        socket_errors=stats["socket_errors"],
    )


def _median(results: list[Result]) -> Result:
    return Result(
        rps=statistics.median(r.rps for r in results),
        p50_ms=statistics.median(r.p50_ms for r in results),
        p99_ms=statistics.median(r.p99_ms for r in results),
        non_2xx=sum(r.non_2xx for r in results),
        socket_errors=sum(r.socket_errors for r in results),
    )


def _measure(args: argparse.Namespace, server: Server, key: str, work: Path) -> dict:
    targets = _targets(server.base, key)
    scripts = {}
    for index, target in enumerate(targets):
        scripts[target] = work / f"target{index}.lua"
        scripts[target].write_text(_lua(target, key))
    results: dict[Target, list[Result]] = {target: [] for target in targets}
    for target in targets:  # warm up every path once (imports, caches, SQLite pages)
        _run_wrk(args, server.base + target.path, scripts[target], args.warmup)
    for _ in range(args.rounds):
        for target in targets:
            url = server.base + target.path
            results[target].append(_run_wrk(args, url, scripts[target], args.duration))
    return {target: _median(found) for target, found in results.items()}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _report(args: argparse.Namespace, results: dict[Target, Result], load_before: str) -> None:
    print(
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s against one "
        f"`avatar-service serve` (1 HTTP worker, default settings except "
        f"AVATAR_RATE_LIMIT={RATE_LIMIT}, so the limiter does not throttle wrk); "
        f"median of {args.rounds} interleaved round(s)."
    )
    header = (
        f"{'endpoint':<30} {'req/s':>9} {'vs peer':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'non-2xx':>8} {'errors':>7}"
    )
    print(header)
    print("-" * len(header))
    peer = results[next(t for t in results if t.path == "/healthz")].rps
    for target, r in results.items():
        print(
            f"{target.name:<30} {r.rps:>9,.0f} {r.rps / peer:>8.2f} {r.p50_ms:>8.2f} "
            f"{r.p99_ms:>8.2f} {r.non_2xx:>8} {r.socket_errors:>7}  {target.bar}"
        )
    # Other work on the machine shows up here; the "vs peer" ratios are the steadier figures.
    print(
        f"load average (1/5/15 min): {load_before} before, {_load()} after; {os.cpu_count()} CPUs"
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.service", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per run (10)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (16)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (1)")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds (1)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up seconds per path (1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if shutil.which("wrk") is None:
        print("bench.service needs wrk: apt-get install wrk", file=sys.stderr)
        return 2
    load_before = _load()
    with (
        tempfile.TemporaryDirectory(prefix="bench-service-") as work,
        running_serve(Path(work), {"AVATAR_RATE_LIMIT": RATE_LIMIT}) as (server, key),
    ):
        results = _measure(args, server, key, Path(work))
    _report(args, results, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
