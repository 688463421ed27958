"""Attack: outbound URLs aimed at the service's own machine or network (SSRF), against real
`serve` processes. Each is refused when saved, with 422 naming the field, on every place an
owner gives one (custom_agent_url on create and update, the webhook of a generation and of an
upscale); AVATAR_WEBHOOK_ALLOW_PRIVATE=1 lets loopback through but never a smuggled or
ambiguous URL; and a URL stored before the rule existed is refused at use without a traceback
in serve's log."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx
import pytest
import websockets

from tests.service.abuse import assert_clean_log

# Private targets, refused unless AVATAR_WEBHOOK_ALLOW_PRIVATE=1.
PRIVATE = [
    "https://127.0.0.1/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://localhost/hook",
    "https://app.localhost./hook",
    "https://metadata.google.internal/computeMetadata/v1/",
]
# Refused whatever the setting.
SMUGGLED = [
    "https://0177.0.0.1/hook",
    "https://2130706433/hook",
    "https://0x7f.1/hook",
    "https://example.com/\r\nX-Injected: 1",
    "https://exa mple.com/hook",
    "https://%31%32%37.0.0.1/hook",
    "https://user:secret@example.com/hook",
]
CUSTOM = {"name": "Ada", "runtime_kind": "custom_agent", "custom_agent_protocol": "openai_chat"}
MP4_HEAD = b"\x00\x00\x00\x18ftypmp42"


def _refused(response: httpx.Response, field: str) -> str:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    assert [d["field"] for d in error["details"]] == [field], error
    return error["message"]


def _saves(client: httpx.Client, agent_id: str, url: str) -> dict[str, httpx.Response]:
    """Every place an owner gives an outbound URL, given `url`."""
    upload = [("webhook_url", (None, url.encode())), ("file", ("a.mp4", MP4_HEAD, "video/mp4"))]
    return {
        "create": client.post("/v1/agents", json=CUSTOM | {"custom_agent_url": url}),
        "managed": client.post("/v1/agents", json={"name": "M", "custom_agent_url": url}),
        "update": client.post(
            f"/v1/agents/{agent_id}/update",
            json={"runtime_kind": "custom_agent", "custom_agent_url": url},
        ),
        "generation": client.post(
            "/v1/avatar/async_generate", json={"prompt": "p", "webhook": {"url": url}}
        ),
        "upscale": client.post("/v1/video/upscale?resolution=2k", files=upload),
    }


FIELDS = {
    "create": "custom_agent_url",
    "managed": "custom_agent_url",
    "update": "custom_agent_url",
    "generation": "webhook.url",
    "upscale": "webhook_url",
}


@pytest.fixture(scope="module")
def strict(start_serve_module):
    return start_serve_module()


def _client(server) -> httpx.Client:
    return httpx.Client(base_url=server.base, headers=server.auth, timeout=10)


def _agent(client: httpx.Client, **fields) -> str:
    response = client.post("/v1/agents", json={"name": "Ada", **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]["agent_id"]


@pytest.mark.parametrize("url", PRIVATE + SMUGGLED)
def test_refused_when_saved(strict, url):
    with _client(strict) as client:
        agent_id = _agent(client)
        for place, response in _saves(client, agent_id, url).items():
            message = _refused(response, FIELDS[place])
            assert message.startswith(FIELDS[place] + ": ") and len(message) < 200, message
        assert client.get(f"/v1/agents/{agent_id}").json()["data"]["custom_agent_url"] is None
    assert_clean_log(strict)


def test_allow_private_lets_loopback_through_but_not_smuggling(start_serve):
    server = start_serve(AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    with _client(server) as client:
        agent_id = _agent(client)
        for url in [*PRIVATE, "http://127.0.0.1:9/hook"]:
            answers = _saves(client, agent_id, url)
            assert answers["create"].status_code == 201, answers["create"].text
            assert answers["generation"].status_code == 200, answers["generation"].text
        for url in SMUGGLED:
            for place, response in _saves(client, agent_id, url).items():
                _refused(response, FIELDS[place])
    assert_clean_log(server)


async def _talk(server, route_id: str) -> dict:
    """The first frame after the visitor's message other than a delta."""
    url = server.base.replace("http", "ws") + f"/r/{route_id}/ws"
    async with websockets.connect(url) as ws, asyncio.timeout(30):
        while json.loads(await ws.recv()).get("state") != "ready":
            pass
        await ws.send(json.dumps({"type": "message", "text": "hello"}))
        while (frame := json.loads(await ws.recv()))["type"] in ("delta", "state"):
            pass
        return frame


@pytest.mark.parametrize("stored", ["https://0177.0.0.1/chat", "https://127.0.0.1/chat"])
def test_a_url_stored_before_the_rule_is_refused_at_use(strict, stored):
    with _client(strict) as client:
        agent_id = _agent(client, **CUSTOM, custom_agent_url="https://agent.example.com/chat")
        route = client.post(f"/v1/agents/{agent_id}/routes", json={}).json()["data"]["id"]
    # What an older version let an owner save: written behind the service's back.
    with sqlite3.connect(Path(strict.data_dir) / "avatar.db") as db:
        db.execute("UPDATE agents SET custom_agent_url = ? WHERE agent_id = ?", (stored, agent_id))
    frame = asyncio.run(_talk(strict, route))
    assert frame == {
        "type": "error",
        "message": "The agent's service is at an address this server may not call.",
    }
    assert_clean_log(strict)
    assert any("custom_agent_url" in line and "(refused)" in line for line in strict.log)
