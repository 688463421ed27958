"""Conversations speaking at once against one `avatar-service serve` (offline responder, eSpeak NG).

    python -m bench.voice_conversations [--sockets 50] [--duration 30] [--period 5] [--rounds 1]

Opens `--sockets` conversation sockets with speech (`?speech=1`); each sends a message of three
sentences every `--period` seconds (at a seeded random phase), which the offline responder
echoes after its notice, so each reply is three sentences spoken as three speech frames. It
measures, per reply, the time from the text frame that completes the reply's first sentence to
the first speech frame: both arrive on the same socket, so the difference is the time the server
took from the sentence being complete to its first audio leaving (synthesis and sending), plus
this client's own scheduling (it runs on the same machine and shares its CPUs)."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import websockets

from bench.server import api_call, running_serve
from service.domain.speaking import complete_sentences

MESSAGES = (
    "I like the sea. It is calm today. Tell me more about boats.",
    "The train was late again. We waited for an hour. Then it rained.",
    "My sister plays the cello. She practises every evening. It sounds lovely.",
)


@dataclass
class Tally:
    first_audio_ms: list[float] = field(default_factory=list)
    sentences: int = 0
    replies: int = 0
    errors: list[str] = field(default_factory=list)


async def _reply(ws, tally: Tally) -> None:
    """Read one reply: its deltas, speech frames and PCM, until its three sentences are heard."""
    text, completed_at, spoken = "", None, 0
    while spoken < 3:
        raw = await ws.recv()
        if isinstance(raw, bytes):
            continue
        frame = json.loads(raw)
        if frame["type"] == "delta" and completed_at is None:
            text += frame["text"]
            if complete_sentences(text)[0]:
                completed_at = time.perf_counter()
        elif frame["type"] == "message" and completed_at is None:
            completed_at = time.perf_counter()  # the reply ended: its last sentence is complete
        elif frame["type"] == "speech":
            if spoken == 0:
                tally.first_audio_ms.append((time.perf_counter() - completed_at) * 1000)
            spoken += 1
        elif frame["type"] == "error":
            tally.errors.append(frame["message"])
            return
    tally.sentences += spoken
    tally.replies += 1


async def _converse(url: str, args: argparse.Namespace, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    async with websockets.connect(url, max_queue=None, max_size=None) as ws:
        # Ready, the greeting, then the greeting spoken (one sentence) and its PCM.
        while json.loads(await ws.recv())["type"] != "speech":
            pass
        await ws.recv()
        next_send = time.perf_counter() + rng.uniform(0, args.period)
        stop_at = time.perf_counter() + args.duration
        while next_send < stop_at:
            await asyncio.sleep(max(0.0, next_send - time.perf_counter()))
            await ws.send(json.dumps({"type": "message", "text": rng.choice(MESSAGES)}))
            await _reply(ws, tally)
            next_send += args.period


async def _round(url: str, args: argparse.Namespace, seed: int) -> Tally:
    tally = Tally()
    results = await asyncio.gather(
        *(_converse(url, args, seed * 10_000 + n, tally) for n in range(args.sockets)),
        return_exceptions=True,
    )
    tally.errors += [repr(r) for r in results if isinstance(r, BaseException)]
    return tally


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _report(args: argparse.Namespace, rounds: list[Tally]) -> None:
    print(
        f"\n{args.sockets} conversations speaking, a 3-sentence message every {args.period:g} s "
        f"each, {args.duration:g} s per round; offline responder, eSpeak NG, 1 HTTP worker"
    )
    header = f"{'round':>5} {'replies':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}"
    print(header)
    print("-" * len(header))
    p99s = []
    for index, tally in enumerate(rounds, 1):
        lat = tally.first_audio_ms
        p99s.append(_percentile(lat, 0.99))
        print(
            f"{index:>5} {tally.replies:>8} {_percentile(lat, 0.5):>8.1f} {p99s[-1]:>8.1f} "
            f"{max(lat, default=0):>8.1f} {len(tally.errors):>7}"
        )
        for error in sorted(set(tally.errors))[:3]:
            print(f"      error: {error}")
    print(
        "first sentence complete -> first audio frame, median p99: "
        f"{statistics.median(p99s):.1f} ms (bar: < 150 ms)"
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.voice_conversations", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sockets", type=int, default=50, help="conversations (50)")
    parser.add_argument("--duration", type=float, default=30, help="seconds per round (30)")
    parser.add_argument("--period", type=float, default=5, help="seconds between messages (5)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (1)")
    return parser.parse_args(argv)


def run(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    caps = ("AVATAR_MAX_SOCKETS_PER_CLIENT", "AVATAR_MAX_CONVERSATIONS_PER_ROUTE")
    env = {name: str(max(args.sockets, 1)) for name in caps}
    with (
        tempfile.TemporaryDirectory(prefix="bench-voice-") as work,
        running_serve(Path(work), env) as (server, key),
    ):
        agent = {"name": "B", "greeting": "Hi", "voice_id": "espeak-en-us"}
        agent_id = api_call(server.base, key, "POST", "/v1/agents", agent)["agent_id"]
        route = api_call(server.base, key, "POST", f"/v1/agents/{agent_id}/routes", {})
        url = f"ws://127.0.0.1:{server.port}/r/{route['id']}/ws?speech=1"
        rounds = [asyncio.run(_round(url, args, seed)) for seed in range(args.rounds)]
    _report(args, rounds)


if __name__ == "__main__":
    run()
