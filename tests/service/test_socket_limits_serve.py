"""The conversation sockets under attack, against real `serve` processes: one client opening
many sockets, many clients crowding one route, sockets that never speak, and frames far over
the protocol's size, with the HTTP worker's peak memory measured while they arrive."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import websockets

from tests.service.test_live_serve import _holders

pytestmark = pytest.mark.slow

MIB = 1024 * 1024


def _route(server) -> str:
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        agent = client.post("/v1/agents", json={"name": "Ada", "greeting": "Hi"}).json()["data"]
        route = client.post(f"/v1/agents/{agent['agent_id']}/routes", json={}).json()["data"]
    return f"ws://127.0.0.1:{server.port}/r/{route['id']}/ws"


async def _first_state(ws) -> dict:
    async with asyncio.timeout(10):
        while (frame := json.loads(await ws.recv()))["type"] != "state":
            pass
    return frame


async def _connect(url: str, client: int = 1):
    """A socket from the loopback address 127.0.0.`client` (each its own client address)."""
    return await websockets.connect(url, local_addr=(f"127.0.0.{client}", 0), max_size=None)


async def _closed_code(ws) -> int:
    with contextlib.suppress(websockets.ConnectionClosed):
        async with asyncio.timeout(10):
            while True:
                await ws.recv()
    return ws.close_code


async def _tally(sockets: list) -> dict:
    """How many sockets opened ready, and how many were refused (and why, and with what code)."""
    tally: dict = {}
    for ws in sockets:
        frame = await _first_state(ws)
        if frame["state"] == "ready":
            key = "ready"
        else:
            key = (frame["state"], frame["reason"], await _closed_code(ws))
        tally[key] = tally.get(key, 0) + 1
    return tally


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.service.conftest import serve_starter

    with serve_starter(tmp_path_factory.mktemp("limits")) as start:
        server = start()
        yield server
        # The attacks get bounded answers, not faults.
        assert not [line for line in server.log if "Traceback" in line or "ERROR" in line]


async def _twenty_sockets(url: str) -> dict:
    """Twenty sockets from one client, tallied by how each ended up, then closed."""
    sockets = [await _connect(url) for _ in range(20)]
    try:
        return await _tally(sockets)
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets))


def test_one_client_holds_at_most_its_cap_of_sockets(server):
    url = _route(server)

    assert asyncio.run(_twenty_sockets(url)) == {
        "ready": 8,
        ("ended", "too_many_sockets", 1013): 12,
    }


def test_the_caps_hold_across_http_workers(start_serve):
    """Granian spreads one client's connections over its workers; the count is shared."""
    server = start_serve(AVATAR_HTTP_WORKERS="2")
    url = _route(server)

    assert asyncio.run(_twenty_sockets(url)) == {
        "ready": 8,
        ("ended", "too_many_sockets", 1013): 12,
    }


def test_refused_sockets_that_leave_at_once_cost_nothing(server):
    """A client past its cap that drops each socket right after the handshake: every refusal
    meets a closed socket (the module's log check asserts nothing went wrong)."""
    url = _route(server)

    async def hit_and_run() -> dict:
        held = [await _connect(url, 30) for _ in range(8)]
        for _ in range(12):
            (await _connect(url, 30)).transport.abort()
        extra = await _connect(url, 30)
        try:
            return await _tally([*held, extra])
        finally:
            await asyncio.gather(*(ws.close() for ws in [*held, extra]))

    assert asyncio.run(hit_and_run()) == {"ready": 8, ("ended", "too_many_sockets", 1013): 1}


def test_one_route_holds_at_most_its_cap_of_conversations(server):
    url = _route(server)

    async def crowd() -> dict:
        # Two sockets from each of 30 addresses: no client reaches its own cap.
        sockets = [await _connect(url, 2 + n // 2) for n in range(60)]
        try:
            return await _tally(sockets)
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))

    assert asyncio.run(crowd()) == {"ready": 50, ("ended", "route_full", 1013): 10}


def test_a_silent_socket_ends_idle_and_leaves_nothing_kept(start_serve):
    server = start_serve(AVATAR_CONVERSATION_IDLE_S="1")
    url = _route(server)

    async def wait_silently() -> tuple[dict, int]:
        ws = await _connect(url, 40)
        assert (await _first_state(ws))["state"] == "ready"
        return await _first_state(ws), await _closed_code(ws)

    assert asyncio.run(wait_silently()) == (
        {"type": "state", "state": "ended", "reason": "idle"},
        1000,
    )
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        assert client.get("/v1/conversations").json()["data"]["items"] == []
        assert client.get("/v1/usage").json()["data"]["items"] == []


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@dataclass(frozen=True)
class Flood:
    codes: list[int]  # how each socket was closed
    idle_kib: int  # the HTTP worker's resident size before the flood
    peak_kib: int  # its highest during the flood
    after_kib: int  # and once every socket is closed


@pytest.fixture(scope="module")
def flood(server) -> Flood:
    """20 sockets, each from its own address (under the client cap) and all held open first,
    each sending one 15 MB text frame at once."""
    url = _route(server)
    frame = "x" * (15 * 1000 * 1000)

    async def run() -> Flood:
        sockets = [await _connect(url, 50 + n) for n in range(20)]
        for ws in sockets:
            assert (await _first_state(ws))["state"] == "ready"
        (worker,) = _holders(server, sockets[:1])
        idle_kib = _kib(worker, "VmRSS")
        Path(f"/proc/{worker}/clear_refs").write_text("5")  # restart the peak (VmHWM) here
        codes = await asyncio.gather(*(_send_and_close(ws, frame) for ws in sockets))
        return Flood(codes, idle_kib, _kib(worker, "VmHWM"), _kib(worker, "VmRSS"))

    result = asyncio.run(run())
    print(
        f"HTTP worker under the frame flood: idle {result.idle_kib / 1024:.0f} MiB,"
        f" peak {result.peak_kib / 1024:.0f} MiB, after {result.after_kib / 1024:.0f} MiB"
    )
    return result


def test_oversized_frames_close_1009_and_are_not_kept(flood):
    assert flood.codes == [1009] * 20
    assert flood.after_kib - flood.idle_kib < 64 * 1024


@pytest.mark.xfail(
    strict=True,
    reason="Granian gives its WebSocket transport (tungstenite) no size setting: a frame of up"
    " to 16 MiB is read whole before the application can refuse it",
)
def test_the_worker_stays_within_64_mib_of_idle_during_the_flood(flood):
    assert flood.peak_kib - flood.idle_kib < 64 * 1024


async def _send_and_close(ws, frame: str) -> int:
    with contextlib.suppress(websockets.ConnectionClosed):
        await ws.send(frame)
    return await _closed_code(ws)
