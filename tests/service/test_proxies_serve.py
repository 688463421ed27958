"""A real `serve` behind a reverse proxy (played by the test, from 127.0.0.1): links come out as
the visitor called, and each visitor gets its own socket cap, only when AVATAR_TRUSTED_PROXIES
names the proxy; the same headers from anyone else change nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
import websockets

pytestmark = pytest.mark.slow

HTTPS_PROXY = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "avatars.example.com"}


@pytest.fixture(scope="module")
def servers(start_serve_module) -> Iterator[dict]:
    servers = {
        "trusting": start_serve_module(AVATAR_TRUSTED_PROXIES="127.0.0.1"),
        "plain": start_serve_module(),
    }
    yield servers
    for server in servers.values():
        assert not [line for line in server.log if "Traceback" in line or "ERROR" in line]


def _route(server, headers: dict) -> dict:
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        agent = client.post("/v1/agents", json={"name": "Ada"}).json()["data"]
        path = f"/v1/agents/{agent['agent_id']}/routes"
        return client.post(path, json={}, headers=headers).json()["data"]


def test_links_behind_a_trusted_https_proxy_are_https(servers):
    route = _route(servers["trusting"], HTTPS_PROXY)
    assert route["url"] == f"https://avatars.example.com/r/{route['id']}"


def test_the_same_headers_from_an_untrusted_peer_change_no_link(servers):
    plain = servers["plain"]
    route = _route(plain, HTTPS_PROXY)
    assert route["url"] == f"http://127.0.0.1:{plain.port}/r/{route['id']}"


async def _states(url: str, forwarded_for: list[str], local: str = "127.0.0.1") -> list[str]:
    """The first state of a socket sent on with each `X-Forwarded-For` value, all held open
    together: `ready`, or the reason it was refused."""
    sockets = [
        await websockets.connect(
            url, additional_headers={"X-Forwarded-For": value}, local_addr=(local, 0)
        )
        for value in forwarded_for
    ]
    states = []
    for ws in sockets:
        async with asyncio.timeout(10):
            while (frame := json.loads(await ws.recv()))["type"] != "state":
                pass
        states.append(frame.get("reason", frame["state"]))
    await asyncio.gather(*(ws.close() for ws in sockets))
    return sorted(states)


def _socket_url(server) -> str:
    return f"ws://127.0.0.1:{server.port}/r/{_route(server, {})['id']}/ws"


def test_behind_a_trusted_proxy_each_visitor_has_its_own_cap(servers):
    url = _socket_url(servers["trusting"])
    # Whatever a visitor writes before the proxy's own entry is not believed.
    visitors = ["198.51.100.1"] * 9 + ["198.51.100.1, 198.51.100.2"] * 8
    assert asyncio.run(_states(url, visitors)) == ["ready"] * 16 + ["too_many_sockets"]


@pytest.mark.parametrize(("server", "local"), [("trusting", "127.0.0.2"), ("plain", "127.0.0.1")])
def test_x_forwarded_for_from_anyone_else_is_ignored(servers, server, local):
    """From an address that is not the trusted proxy's, or with no proxy trusted, every
    socket counts as its peer's, whatever it claims."""
    url = _socket_url(servers[server])
    claims = [f"198.51.100.{n}" for n in range(10)]
    assert asyncio.run(_states(url, claims, local)) == ["ready"] * 8 + ["too_many_sockets"] * 2
