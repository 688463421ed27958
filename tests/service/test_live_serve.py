"""Conversation sockets against real `serve` processes: with two HTTP workers a revoke or a
stop handled by one worker ends the sockets held by the other, and a crashed serve leaves no
conversation open (or unbilled) after its restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import httpx
import pytest
import websockets

from tests.service.processes import holders

pytestmark = pytest.mark.slow

SOCKETS = 8
# Each socket must see its end within a second; the margin covers a loaded CI machine.
END_WITHIN_S = 3.0


async def _frame(ws, *types: str, timeout: float = 10.0) -> dict:
    async with asyncio.timeout(timeout):
        while (frame := json.loads(await ws.recv()))["type"] not in types:
            pass
    return frame


async def _ended_after(ws, started: float) -> tuple[dict, float]:
    frame = await _frame(ws, "state")
    while frame["state"] != "ended":
        frame = await _frame(ws, "state")
    with pytest.raises(websockets.ConnectionClosed):
        await asyncio.wait_for(ws.recv(), 5)
    return frame, time.monotonic() - started


async def _open(url: str, count: int) -> list:
    """`count` sockets, each its own connection (so Granian spreads them over its workers)."""
    sockets = [await websockets.connect(url) for _ in range(count)]
    for ws in sockets:
        await _frame(ws, "state")
    return sockets


async def _talk(ws) -> None:
    """Say something and hear the reply: the conversation is kept (and billed) from here."""
    await ws.send(json.dumps({"type": "message", "text": "are you there?"}))
    await _frame(ws, "message")  # the greeting
    await _frame(ws, "message")  # the reply


async def _open_on_every_worker(server, url: str, count: int, workers: int = 2) -> list:
    """At least `count` sockets, held by `workers` different processes of `serve` (the kernel
    spreads connections over the workers by a hash: a few more may be needed)."""
    sockets = await _open(url, count)
    while len(_holders(server, sockets)) < workers:
        assert len(sockets) < 64, "every socket landed on one HTTP worker"
        sockets += await _open(url, 1)
    return sockets


def _holders(server, sockets: list) -> set[int]:
    """The pids of serve's processes that hold the server side of `sockets`."""
    return holders(server, {ws.transport.get_extra_info("sockname")[1] for ws in sockets})


@pytest.fixture
def server(start_serve):
    # All sockets come from 127.0.0.1, and up to 64 may be opened to reach both workers.
    return start_serve(
        AVATAR_HTTP_WORKERS="2", AVATAR_SWEEP_INTERVAL_S="0.2", AVATAR_MAX_SOCKETS_PER_CLIENT="64"
    )


def _route(client: httpx.Client, **body) -> dict:
    agent = client.post("/v1/agents", json={"name": "Ada", "greeting": "Hi"}).json()["data"]
    return client.post(f"/v1/agents/{agent['agent_id']}/routes", json=body).json()["data"]


def test_revoke_ends_sockets_on_every_worker(server, poll):
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        route = _route(client)

        async def scenario():
            url = f"ws://127.0.0.1:{server.port}/r/{route['id']}/ws"
            sockets = await _open_on_every_worker(server, url, SOCKETS)
            await asyncio.gather(*(_talk(ws) for ws in sockets))
            started = time.monotonic()
            client.post(f"/v1/agent-routes/{route['id']}/revoke")
            return await asyncio.gather(*(_ended_after(ws, started) for ws in sockets))

        ended = asyncio.run(scenario())
        for frame, took in ended:
            assert frame == {"type": "state", "state": "ended", "reason": "revoked"}
            assert took < END_WITHIN_S
        # Each worker records its conversations' usage as it closes them.
        items = poll(lambda: _items_once(client, len(ended)))
        assert {item["kind"] for item in items} == {"route_conversation"}


def _items_once(client: httpx.Client, count: int) -> list[dict] | None:
    items = client.get("/v1/usage").json()["data"]["items"]
    return items if len(items) == count else None


def test_expiry_and_session_stop_end_sockets(server, png_bytes):
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        route = _route(client, validity_seconds=3)
        files = {"image": ("a.png", png_bytes(), "image/png")}
        avatar = client.post("/v1/avatars", files=files).json()["data"]
        body = {"avatar_id": avatar["avatar_id"]}
        sid = client.post("/v1/interactive/start_session", json=body).json()["data"]["session"][
            "session_id"
        ]

        async def scenario():
            routed = await _open(f"ws://127.0.0.1:{server.port}/r/{route['id']}/ws", 2)
            in_session = await _open_on_every_worker(
                server, f"ws://127.0.0.1:{server.port}/i/{sid}/ws", 2
            )
            expired = asyncio.gather(*(_ended_after(ws, time.monotonic()) for ws in routed))
            started = time.monotonic()
            client.post("/v1/interactive/stop_sessions", json={"session_ids": [sid]})
            stopped = await asyncio.gather(*(_ended_after(ws, started) for ws in in_session))
            return await expired, stopped

        expired, stopped = asyncio.run(scenario())
        assert {frame["reason"] for frame, _ in expired} == {"expired"}
        assert {frame["reason"] for frame, _ in stopped} == {"session_api"}
        assert all(took < END_WITHIN_S for _, took in stopped)


def test_a_killed_serve_leaves_no_conversation_open(start_serve, poll):
    first = start_serve(AVATAR_HTTP_WORKERS="2")
    with httpx.Client(base_url=first.base, headers=first.auth, timeout=10) as client:
        route = _route(client)

    async def talk():
        ws = (await _open(f"ws://127.0.0.1:{first.port}/r/{route['id']}/ws", 1))[0]
        await _talk(ws)
        # The whole process group at once: a machine crash, not a stop anyone could handle.
        os.killpg(first.process.pid, signal.SIGKILL)

    asyncio.run(talk())
    first.process.wait()
    second = start_serve(data_dir=first.data_dir, port=first.port)
    with httpx.Client(base_url=second.base, headers=first.auth, timeout=10) as client:
        (conversation,) = client.get("/v1/conversations").json()["data"]["items"]
        assert conversation["ended_at"] is not None and conversation["end_reason"] == "lost"
        usage = client.get("/v1/usage").json()["data"]["items"]
        assert [u["ref_id"] for u in usage] == [conversation["conversation_id"]]
