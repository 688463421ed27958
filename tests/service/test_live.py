"""The conversation sockets through the test client: the frames of a conversation, validation,
ending on revoke, expiry and session stop, session warm-up and tokens, and what is kept."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from types import SimpleNamespace

import pytest
from litestar.exceptions import WebSocketDisconnect

from service.api.live import MAX_FRAME_BYTES
from service.clock import ManualClock
from service.domain import conversations, turns
from service.domain import live as live_watch
from service.domain.conversations import Setup
from service.domain.errors import ValidationFailed
from service.domain.models import Conversation
from service.domain.sessions import session_token, sweep
from service.domain.turns import Live
from service.settings import load_settings


@pytest.fixture
def route(api, alice) -> dict:
    agent = api.agent(alice, name="Ada", greeting="Hello! Ask me anything.")
    return api.route(alice, agent["agent_id"])


def receive_reply(ws) -> tuple[list[str], dict]:
    """The delta frames' texts and the closing message frame of one reply."""
    deltas = []
    while (frame := ws.receive_json())["type"] == "delta":
        deltas.append(frame)
    assert frame["type"] == "message" and frame["role"] == "assistant", frame
    assert {d["id"] for d in deltas} <= {frame["id"]}
    return [d["text"] for d in deltas], frame


def open_route(api, route_id: str):
    ws = api.client.websocket_connect(f"/r/{route_id}/ws")
    ws.__enter__()
    return ws


def test_greeting_then_streamed_replies(api, route):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        assert ws.receive_json() == {"type": "state", "state": "ready"}
        greeting = ws.receive_json()
        assert greeting["type"] == "message" and greeting["text"] == "Hello! Ask me anything."
        ws.send_json({"type": "message", "text": "What is 2 + 2?"})
        deltas, message = receive_reply(ws)
        assert len(deltas) >= 2 and "".join(deltas) == message["text"]
        assert "What is 2 + 2?" in message["text"]  # the offline responder echoes the visitor
        ws.send_json({"type": "ping"})
        assert ws.receive_json() == {"type": "pong"}


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "message", "text": ""},
        {"type": "message", "text": "x" * 4001},
        {"type": "message"},
        {"type": "message", "text": 5},
        {"type": "shout", "text": "hi"},
        "not json at all",
        b'{"type": "ping"}',  # binary: voice only
    ],
)
def test_bad_frames_get_an_error_frame_and_the_conversation_goes_on(api, route, frame):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()  # ready, greeting
        if isinstance(frame, str):
            ws.send_text(frame)
        elif isinstance(frame, bytes):
            ws.send_bytes(frame)
        else:
            ws.send_json(frame)
        error = ws.receive_json()
        assert error["type"] == "error" and error["message"]
        ws.send_json({"type": "message", "text": "still there?"})
        assert receive_reply(ws)[1]["text"]


@pytest.mark.parametrize("char", ["é", "\U0001f600"])
def test_the_longest_message_is_taken_however_it_is_escaped(api, route, char):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()
        frame = json.dumps({"type": "message", "text": char * 4000})  # ASCII: \u escapes
        assert len(frame) <= MAX_FRAME_BYTES
        ws.send_text(frame)
        assert receive_reply(ws)[1]["type"] == "message"


@pytest.mark.parametrize(
    "payload",
    [
        "x" * (MAX_FRAME_BYTES + 1),
        "é" * (MAX_FRAME_BYTES // 2 + 1),  # fewer characters than the bound, more bytes
        b"\0" * (MAX_FRAME_BYTES + 1),
    ],
    ids=["text", "utf8", "binary"],
)
def test_an_oversized_frame_ends_the_conversation_with_1009(api, route, payload):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()
        ws.send_bytes(payload) if isinstance(payload, bytes) else ws.send_text(payload)
        assert ws.receive_json() == {"type": "state", "state": "ended", "reason": "frame_too_large"}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1009


@pytest.mark.parametrize("state", ["unknown", "revoked", "expired"])
def test_no_socket_opens_for_a_link_that_admits_nobody(api, alice, route, state):
    route_id = route["id"]
    if state == "unknown":
        route_id = "rt_unknown"
    elif state == "revoked":
        api.post(f"/v1/agent-routes/{route_id}/revoke", alice)
    else:
        route_id = api.route(alice, route["agent_id"], validity_seconds=5)["id"]
        api.clock.advance(5)
    with (
        pytest.raises(WebSocketDisconnect),
        api.client.websocket_connect(f"/r/{route_id}/ws") as ws,
    ):
        ws.receive_json()


def test_revoking_the_route_ends_its_open_sockets(api, alice, route):
    sockets = [open_route(api, route["id"]) for _ in range(3)]
    for ws in sockets:
        ws.receive_json(), ws.receive_json()
    api.post(f"/v1/agent-routes/{route['id']}/revoke", alice)
    for ws in sockets:
        assert ws.receive_json() == {"type": "state", "state": "ended", "reason": "revoked"}
        with pytest.raises(WebSocketDisconnect):
            ws.receive_json()


def test_deleting_the_agent_ends_its_sockets(api, alice, route):
    ws = open_route(api, route["id"])
    ws.receive_json(), ws.receive_json()
    api.post(f"/v1/agents/{route['agent_id']}/delete", alice)
    assert ws.receive_json() == {"type": "state", "state": "ended", "reason": "revoked"}


def test_an_expiring_route_ends_its_sockets_by_the_clock(api, alice, route):
    temporary = api.route(alice, route["agent_id"], validity_seconds=60)
    ws = open_route(api, temporary["id"])
    ws.receive_json(), ws.receive_json()
    api.clock.advance(60)
    assert ws.receive_json() == {"type": "state", "state": "ended", "reason": "expired"}


def test_route_conversations_are_kept_and_billed(api, alice, route, wait_until):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()
        api.clock.advance(100)  # billed from the visitor's first message, not the opening
        ws.send_json({"type": "message", "text": "Hi there"})
        receive_reply(ws)
        api.clock.advance(42.5)
    params = {"route_id": route["id"]}
    # The server records the close just after the client's socket is gone.
    wait_until(
        lambda: api.get("/v1/conversations", alice, params=params).json()["data"]["items"][0][
            "ended_at"
        ]
    )
    listing = api.get("/v1/conversations", alice, params=params).json()
    (item,) = listing["data"]["items"]
    assert item["conversation_id"].startswith("cnv_") and "messages" not in item
    assert item["route_id"] == route["id"] and item["session_id"] is None
    kept = api.get(f"/v1/conversations/{item['conversation_id']}", alice).json()["data"]
    assert [(m["role"], m["text"][:8]) for m in kept["messages"]] == [
        ("assistant", "Hello! A"),
        ("user", "Hi there"),
        ("assistant", kept["messages"][2]["text"][:8]),
    ]
    assert kept["ended_at"] is not None and kept["end_reason"] == "closed"
    usage = api.get("/v1/usage", alice).json()["data"]
    assert usage["totals"]["route_conversation_seconds"] == 42.5
    assert usage["items"][0]["ref_id"] == item["conversation_id"]


def test_a_turn_is_one_domain_operation(api, route):
    """What any transport relays: the visitor's message kept, the reply streamed as deltas and
    then kept whole (the voice socket speaks the same turn)."""

    async def turn() -> tuple[list, list]:
        setup = await conversations.admit_route(api.ctx, route["id"])
        live = turns.new_conversation(api.ctx, setup)
        await turns.open_conversation(api.ctx, live)
        said = [await turns.greet(api.ctx, live)]
        said += [item async for item in turns.take_turn(api.ctx, live, "Hi there")]
        with pytest.raises(ValidationFailed):
            await anext(turns.take_turn(api.ctx, live, ""))
        kept = await api.ctx.store.list_messages(live.conversation_id)
        await turns.end_conversation(api.ctx, live, "closed")
        return said, kept

    with api.client.portal() as portal:
        said, kept = portal.call(turn)
    greeting, *deltas, reply = said
    assert isinstance(greeting, turns.AgentMessage) and greeting.message_id.endswith(".1")
    assert deltas and all(isinstance(d, turns.ReplyDelta) for d in deltas)
    assert {d.message_id for d in deltas} == {reply.message_id} and reply.message_id.endswith(".3")
    assert "".join(d.text for d in deltas) == reply.text
    assert [(m.seq, m.role, m.text) for m in kept] == [
        (1, "assistant", greeting.text), (2, "user", "Hi there"), (3, "assistant", reply.text)
    ]  # fmt: skip


def test_a_route_socket_without_a_visitor_message_is_neither_kept_nor_billed(api, alice, route):
    for _ in range(3):
        with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
            ws.receive_json(), ws.receive_json()
            api.clock.advance(60)
            ws.send_json({"type": "ping"})
            assert ws.receive_json() == {"type": "pong"}
    # Closing reached the server once a socket on the same client answers again.
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json()
    assert api.get("/v1/conversations", alice).json()["data"]["items"] == []
    assert api.get("/v1/usage", alice).json()["data"]["items"] == []


def test_a_route_conversation_without_visitor_messages_ends_idle(make_api, wait_until):
    api = make_api(conversation_idle_s=300)
    alice = api.key()
    route = api.route(alice, api.agent(alice, greeting="Hi")["agent_id"])
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()
        api.clock.advance(299)
        ws.send_json({"type": "message", "text": "still here"})  # a message restarts the wait
        receive_reply(ws)
        api.clock.advance(299)
        ws.send_json({"type": "ping"})  # pings do not count
        assert ws.receive_json() == {"type": "pong"}
        api.clock.advance(1)
        assert ws.receive_json() == {"type": "state", "state": "ended", "reason": "idle"}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1000
    wait_until(lambda: api.get("/v1/conversations", alice).json()["data"]["items"][0]["ended_at"])
    (item,) = api.get("/v1/conversations", alice).json()["data"]["items"]
    assert item["end_reason"] == "idle"
    assert api.get("/v1/usage", alice).json()["data"]["totals"]["route_conversation_seconds"] == 300


@pytest.mark.parametrize(
    ("cap", "reason"),
    [("max_sockets_per_client", "too_many_sockets"), ("max_conversations_per_route", "route_full")],
)
def test_sockets_past_a_cap_are_refused_with_1013(make_api, wait_until, cap, reason):
    api = make_api(**{cap: 2})
    alice = api.key()
    agent_id = api.agent(alice)["agent_id"]
    route, other = api.route(alice, agent_id), api.route(alice, agent_id)
    held = [open_route(api, route["id"]) for _ in range(2)]
    for ws in held:
        assert ws.receive_json() == {"type": "state", "state": "ready"}
    # The client's cap holds on every route; the route's only on the full route.
    third = other if reason == "too_many_sockets" else route
    assert not _opens(api, other["id"]) if third is other else _opens(api, other["id"])
    with api.client.websocket_connect(f"/r/{third['id']}/ws") as refused:
        assert refused.receive_json() == {"type": "state", "state": "ended", "reason": reason}
        with pytest.raises(WebSocketDisconnect) as closed:
            refused.receive_json()
        assert closed.value.code == 1013
    held.pop().__exit__(None, None, None)  # a place frees up when a socket closes
    wait_until(lambda: _opens(api, third["id"]))
    held.pop().__exit__(None, None, None)


def _opens(api, route_id: str) -> bool:
    with api.client.websocket_connect(f"/r/{route_id}/ws") as ws:
        return ws.receive_json() == {"type": "state", "state": "ready"}


def test_conversations_of_another_owner_are_not_found(api, alice, bob, route):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        ws.receive_json(), ws.receive_json()
        ws.send_json({"type": "message", "text": "hello"})
        receive_reply(ws)
    cid = api.get("/v1/conversations", alice).json()["data"]["items"][0]["conversation_id"]
    assert api.get(f"/v1/conversations/{cid}", bob).status_code == 404
    assert api.post(f"/v1/conversations/{cid}/delete", bob).status_code == 404
    assert api.post(f"/v1/conversations/{cid}/delete", alice).status_code == 200
    assert api.get(f"/v1/conversations/{cid}", alice).status_code == 404


# Sessions


def start_session(api, auth, **body) -> dict:
    avatar = api.avatar(auth)
    body = {"avatar_id": avatar["avatar_id"], **body}
    response = api.post("/v1/interactive/start_session", auth, json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_a_session_socket_connects_then_turns_ready(make_api, wait_until):
    api = make_api(session_warmup_s=30)
    alice = api.key()
    sid = start_session(api, alice)["session"]["session_id"]
    with api.client.websocket_connect(f"/i/{sid}/ws") as ws:
        assert ws.receive_json() == {"type": "state", "state": "connecting"}
        api.clock.advance(30)
        assert ws.receive_json() == {"type": "state", "state": "ready"}
        ws.send_json({"type": "message", "text": "hello"})
        assert "hello" in receive_reply(ws)[1]["text"]


def test_session_token_opens_the_socket_and_a_wrong_one_does_not(api, alice):
    started = start_session(api, alice)
    sid, token = started["session"]["session_id"], started["session_token"]
    assert token == session_token(api.ctx, sid) and len(token) >= 32
    with api.client.websocket_connect(f"/i/{sid}/ws?token={token}") as ws:
        assert ws.receive_json()["type"] == "state"
    with (
        pytest.raises(WebSocketDisconnect),
        api.client.websocket_connect(f"/i/{sid}/ws?token=st_wrong") as ws,
    ):
        ws.receive_json()


def test_stopping_the_session_ends_its_socket_and_no_new_one_opens(api, alice):
    sid = start_session(api, alice)["session"]["session_id"]
    with api.client.websocket_connect(f"/i/{sid}/ws") as ws:
        ws.receive_json()  # connecting (or ready)
        api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [sid]})
        while (frame := ws.receive_json())["state"] != "ended":
            pass
        assert frame == {"type": "state", "state": "ended", "reason": "session_api"}
    with pytest.raises(WebSocketDisconnect), api.client.websocket_connect(f"/i/{sid}/ws") as ws:
        ws.receive_json()


def test_a_session_without_visitors_stops_after_its_idle_timeout(api, alice, wait_until):
    sid = start_session(api, alice, idle_timeout=2)["session"]["session_id"]
    with api.client.websocket_connect(f"/i/{sid}/ws") as ws:
        while ws.receive_json() != {"type": "state", "state": "ready"}:
            pass
        api.clock.advance(600)  # an open socket keeps the session alive
        run_sweep(api)
        ws.send_json({"type": "ping"})
        assert ws.receive_json() == {"type": "pong"}
    assert _session(api, alice, sid)["status"] != "stopped"
    wait_until(lambda: _conversations(api, alice, sid)[0]["ended_at"] is not None)
    api.clock.advance(119)
    run_sweep(api)
    assert _session(api, alice, sid)["status"] != "stopped"
    api.clock.advance(1)
    run_sweep(api)
    session = _session(api, alice, sid)
    assert (session["status"], session["stop_reason"]) == ("stopped", "idle")


def test_idle_timeout_can_be_turned_off_and_is_checked(api, alice):
    session = start_session(api, alice, idle_timeout=-1)["session"]
    assert session["idle_timeout"] == -1
    for bad in (0, -2, 1441, "15", 1.5, True):
        avatar = api.avatar(alice)
        body = {"avatar_id": avatar["avatar_id"], "idle_timeout": bad}
        response = api.post("/v1/interactive/start_session", alice, json=body)
        assert response.status_code == 422, bad


def _conversations(api, auth, sid) -> list[dict]:
    params = {"session_id": sid}
    return api.get("/v1/conversations", auth, params=params).json()["data"]["items"]


def _session(api, auth, sid) -> dict:
    return api.get(f"/v1/interactive/sessions/{sid}", auth).json()["data"]["session"]


def run_sweep(api) -> None:
    with api.client.portal() as portal:
        portal.call(sweep, api.ctx)


# The watch itself, over a store whose reads can fail


class _FlakyRoutes:
    """What the watch reads: the live mark, each route's reason to end, and reads of the
    routes named in `failing` that fail once (a locked or broken database)."""

    def __init__(self) -> None:
        self.mark = b"0"
        self.reasons: dict[str, str] = {}
        self.failing: set[str] = set()
        self.stamped: asyncio.Queue[list[str]] = asyncio.Queue()

    def live_mark(self) -> bytes:
        return self.mark

    async def keep_alive(self, conversation_ids: list[str], now_ms: int) -> None:
        self.stamped.put_nowait(sorted(conversation_ids))

    async def watch_state(self, ctx, setup: Setup) -> tuple[str, None]:
        if setup.route_id in self.failing:
            self.failing.discard(setup.route_id)
            raise sqlite3.OperationalError("database is locked")
        return self.reasons.get(setup.route_id, ""), None


def _live(route_id: str, clock: ManualClock) -> Live:
    setup = Setup("own_1", route_id, None, None, None, None, None, None)
    now = clock.now_ms()
    return Live(Conversation(f"cnv_{route_id}", "own_1", now, now, route_id), setup, kept=True)


def _watch(routes: _FlakyRoutes, clock: ManualClock) -> live_watch.LiveConversations:
    ctx = SimpleNamespace(store=routes, clock=clock, settings=load_settings({}))
    return live_watch.LiveConversations(ctx)


@pytest.fixture
def routes(monkeypatch) -> _FlakyRoutes:
    routes = _FlakyRoutes()
    monkeypatch.setattr(live_watch, "watch_state", routes.watch_state)
    return routes


def test_a_failed_pass_of_the_watch_is_checked_again(routes):
    async def scenario() -> dict[str, str]:
        clock = ManualClock()
        watch = _watch(routes, clock)
        ended: dict[str, str] = {}
        both = asyncio.Event()

        def on_end(route_id: str):
            def end(reason: str) -> None:
                ended[route_id] = reason
                if len(ended) == 2:
                    both.set()

            return end

        for route_id in ("rt_a", "rt_b"):
            await watch.watch(_live(route_id, clock), on_end(route_id))
        routes.reasons = {"rt_a": "revoked", "rt_b": "revoked"}
        routes.failing = {"rt_a"}  # the pass after the change fails at its first check
        routes.mark = b"1"
        try:
            await asyncio.wait_for(both.wait(), 5)
        finally:
            await watch.stop("closed")
        return ended

    assert asyncio.run(scenario()) == {"rt_a": "revoked", "rt_b": "revoked"}


def test_a_conversation_whose_watch_failed_to_start_is_not_kept_alive(routes):
    async def scenario() -> list[str]:
        clock = ManualClock()
        watch = _watch(routes, clock)
        await watch.watch(_live("rt_a", clock), lambda reason: None)
        await asyncio.sleep(0)  # one turn of the loop: the watch starts, and its clock with it
        routes.failing = {"rt_b"}
        with pytest.raises(sqlite3.OperationalError):
            await watch.watch(_live("rt_b", clock), lambda reason: None)
        clock.advance(live_watch.KEEP_ALIVE_MS / 1000)
        try:
            return await asyncio.wait_for(routes.stamped.get(), 5)
        finally:
            await watch.stop("closed")

    assert asyncio.run(scenario()) == ["cnv_rt_a"]
