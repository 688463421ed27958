"""Responders against small fake upstreams on loopback: an OpenAI-compatible chat-completions
server and an AI SDK UI-message-stream endpoint, both scripted per test (chunks to send, and
events to wait for between them, so a test sees each delta arrive while the stream is still
open)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import pytest

from service.responders import (
    CustomAgent,
    ReplyRequest,
    ResponderError,
    Responders,
    Timeouts,
    Turn,
    net,
)
from service.responders.faults import Fault
from service.responders.offline import NOTICE
from service.responders.sse import event_data
from service.settings import Settings

API_KEY = "sk-test-4f9b2c"
AGENT_TOKEN = "agent-token-7d1e"
TIMEOUTS = Timeouts(connect=5.0, read=5.0, total=10.0)  # a hang fails fast, not in minutes

HISTORY = [
    Turn("user", "Hello"),
    Turn("assistant", "Hi! How can I help?"),
    Turn("user", "Tell me a joke"),
]

# --- the fake upstream -------------------------------------------------------------------

CLIENT_LEAVES = object()  # a step: wait until the client closes the connection
HANG_UP = object()  # a step: close the connection in the middle of the answer


@dataclass
class Answer:
    """What the fake upstream answers: `steps` are bytes (sent as one chunk) or asyncio Events
    (waited for); `finish=False` holds the stream open until the test ends."""

    steps: list = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    finish: bool = True
    before_head: asyncio.Event | None = None


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeUpstream:
    """An HTTP/1.1 server on 127.0.0.1 answering every request with `answer` (chunked, then
    closing the connection) and recording what it was sent."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self.connections = 0
        self.client_left = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()

    async def __aenter__(self) -> FakeUpstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def url(self, path: str = "/v1", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            request_line, *header_lines = head.strip().split("\r\n")
            headers = {
                name.strip().lower(): value.strip()
                for name, value in (line.split(":", 1) for line in header_lines)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            path = request_line.split()[1]
            self.seen.append(Seen(path, headers, json.loads(body) if body else None))
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answer = self.answer
        if answer.before_head is not None:
            await answer.before_head.wait()
        head = f"HTTP/1.1 {answer.status} {HTTPStatus(answer.status).phrase}\r\n"
        for name, value in answer.headers.items():
            head += f"{name}: {value}\r\n"
        writer.write((head + "transfer-encoding: chunked\r\nconnection: close\r\n\r\n").encode())
        for step in answer.steps:
            if isinstance(step, asyncio.Event):
                await step.wait()
            elif step is CLIENT_LEAVES:
                if await reader.read(1) == b"":
                    self.client_left.set()
            elif step is HANG_UP:
                return
            else:
                writer.write(b"%x\r\n%s\r\n" % (len(step), step))
            await writer.drain()
        if not answer.finish:
            await asyncio.Event().wait()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def sse(payload: Any) -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"data: " + data + b"\n\n"


DONE = sse(b"[DONE]")


def chat_chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> bytes:
    if content is not None:
        delta["content"] = content
    return sse({"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def ui(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields})


# --- helpers -----------------------------------------------------------------------------


def llm_settings(upstream: FakeUpstream, **changes: Any) -> Settings:
    fields = {
        "llm_base_url": upstream.url("/v1"),
        "llm_api_key": API_KEY,
        "llm_default_model": "default-model",
    }
    return Settings(**(fields | changes))


def agent_request(url: str, protocol: str = "vercel_ai_sdk", **changes: Any) -> ReplyRequest:
    agent = CustomAgent(url=url, protocol=protocol, bearer_token=AGENT_TOKEN)  # type: ignore[arg-type]
    return request(custom_agent=agent, **changes)


def request(**changes: Any) -> ReplyRequest:
    fields: dict[str, Any] = {"conversation_id": "cnv_test", "history": HISTORY}
    return ReplyRequest(**(fields | changes))


async def reply_of(
    responders: Responders, req: ReplyRequest
) -> tuple[list[str], ResponderError | None]:
    deltas: list[str] = []
    try:
        async for delta in responders.responder_for(req).reply(req):
            deltas.append(delta)
    except ResponderError as exc:
        return deltas, exc
    return deltas, None


@asynccontextmanager
async def serving(
    answer: Answer, settings_for: Callable = llm_settings, timeouts: Timeouts = TIMEOUTS
) -> AsyncIterator[tuple[FakeUpstream, Responders]]:
    """A fake upstream answering `answer`, and responders with the settings made for it."""
    async with (
        FakeUpstream(answer) as upstream,
        Responders(settings_for(upstream), timeouts=timeouts) as responders,
    ):
        yield upstream, responders


async def answered(answer: Answer, settings_for, req_for) -> tuple[list[str], Any, FakeUpstream]:
    """Run one reply against a fake upstream; (deltas, error, upstream)."""
    async with serving(answer, settings_for) as (upstream, responders):
        deltas, error = await reply_of(responders, req_for(upstream))
    return deltas, error, upstream


def llm_reply(answer: Answer, settings: dict | None = None, **req: Any):
    return asyncio.run(
        answered(answer, lambda up: llm_settings(up, **(settings or {})), lambda up: request(**req))
    )


def agent_settings(upstream: FakeUpstream) -> Settings:
    return Settings(webhook_allow_private=True)  # the fakes listen on loopback, over http


def agent_reply(answer: Answer, protocol: str = "vercel_ai_sdk", **req: Any):
    return asyncio.run(
        answered(
            answer, agent_settings, lambda up: agent_request(up.url("/agent"), protocol, **req)
        )
    )


# --- server-sent events -------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\n\ndata: b\n\n"],
        [b"data: a\r\n\r\ndata: b\r\n\r\n"],
        [b"data: a\r\rdata: b\r\r"],
        [b"data: a\r", b"\n\r", b"\ndata: b\n", b"\n"],  # CRLF split between chunks
        [b": keep-alive\n\nevent: x\nid: 1\nretry: 5\ndata: a\n\ndata:b"],  # no last blank line
    ],
    ids=["lf", "crlf", "cr", "split", "fields-and-comments"],
)
def test_event_data_is_read_across_line_endings_and_chunks(chunks):
    assert asyncio.run(events_of(chunks)) == ["a", "b"]


def test_event_data_joins_data_lines_and_utf8_split_between_chunks():
    chunks = [b"data: {\ndata: \xc3", b"\xa9}\n\n"]
    assert asyncio.run(events_of(chunks)) == ["{\n\u00e9}"]


def test_an_endless_line_is_refused(monkeypatch):
    monkeypatch.setattr("service.responders.sse.MAX_LINE_CHARS", 100)
    with pytest.raises(Fault, match="longer than 100"):
        asyncio.run(events_of([b"data: " + b"x" * 60, b"x" * 60]))


@pytest.mark.parametrize("line", [b"data: xxxxxxxxx\n", b"data:\n"])
def test_an_endless_event_is_refused(monkeypatch, line):
    """Data lines with no empty line between them are one event, however short each is."""
    monkeypatch.setattr("service.responders.sse.MAX_EVENT_CHARS", 100)
    assert asyncio.run(events_of([line * 5, b"\n"])) == ["\n".join([line[6:-1].decode()] * 5)]
    with pytest.raises(Fault, match="event longer than 100"):
        asyncio.run(events_of([line] * 101))


async def events_of(chunks: list[bytes]) -> list[str]:
    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return [data async for data in event_data(source())]


# --- offline -----------------------------------------------------------------------------


def test_offline_says_no_model_is_configured_and_echoes_the_visitor():
    async def scenario():
        async with Responders(Settings()) as responders:
            deltas, error = await reply_of(responders, request())
            assert responders._clients == []  # offline opens no HTTP client
        return deltas, error

    deltas, error = asyncio.run(scenario())
    assert error is None
    assert len(deltas) >= 3
    assert "".join(deltas) == "".join(NOTICE) + "Tell me a joke"
    assert "No language model is configured" in deltas[0]


# --- the OpenAI-compatible language model ------------------------------------------------


def test_language_model_deltas_arrive_in_order_while_the_stream_is_open():
    async def scenario():
        more, last = asyncio.Event(), asyncio.Event()
        steps = [chat_chunk(role="assistant"), chat_chunk("Why "), more, chat_chunk("did"), last]
        steps += [chat_chunk(" the chicken"), chat_chunk(finish="stop"), DONE]
        async with serving(Answer(steps)) as (_, responders):
            deltas = responders.responder_for(request()).reply(request())
            assert await anext(deltas) == "Why "
            more.set()
            assert await anext(deltas) == "did"
            last.set()
            assert [delta async for delta in deltas] == [" the chicken"]

    asyncio.run(scenario())


def test_language_model_request_has_instruction_history_model_and_key():
    answer = Answer([chat_chunk("ok", finish="stop"), DONE])
    deltas, error, upstream = llm_reply(answer, instruction="You are Ada.", llm_model="gpt-x")
    assert (deltas, error) == (["ok"], None)
    [seen] = upstream.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {
        "model": "gpt-x",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are Ada."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "Tell me a joke"},
        ],
    }


def test_language_model_defaults_model_and_sends_no_key_when_none_is_set():
    answer = Answer([chat_chunk("ok"), DONE])
    _, error, upstream = llm_reply(answer, settings={"llm_api_key": None})
    assert error is None
    [seen] = upstream.seen
    assert seen.body["model"] == "default-model"
    assert seen.body["messages"][0] == {"role": "user", "content": "Hello"}  # no instruction
    assert "authorization" not in seen.headers


def test_language_model_without_any_model_is_a_clear_error():
    deltas, error, upstream = llm_reply(Answer(), settings={"llm_default_model": None})
    assert deltas == [] and upstream.connections == 0
    assert str(error) == (
        "No language model is chosen for this agent, and the server has no default."
    )


FUNCTION_TOOL = {"type": "function", "function": {"name": "weather", "parameters": {}}}
MCP_TOOL = {"type": "mcp", "server_label": "crm", "server_url": "https://mcp.example/sse"}


@pytest.mark.parametrize(
    ("tools", "sent"),
    [
        ([FUNCTION_TOOL, MCP_TOOL], [FUNCTION_TOOL, MCP_TOOL]),  # an array goes as it is
        (MCP_TOOL, [MCP_TOOL]),  # an object is one tool definition
        ([], None),  # the API refuses an empty array
        ({}, None),
        (None, None),
    ],
    ids=["array", "object", "empty-array", "empty-object", "unset"],
)
def test_language_model_tools_are_passed_through(tools, sent):
    _, error, upstream = llm_reply(Answer([chat_chunk("ok"), DONE]), tools=tools)
    assert error is None
    assert upstream.seen[0].body.get("tools") == sent


def test_tool_call_deltas_and_unknown_fields_are_ignored():
    tool_call = {"index": 0, "id": "t1", "function": {"name": "weather", "arguments": "{}"}}
    steps = [
        chat_chunk(tool_calls=[tool_call]),
        chat_chunk("Sunny", reasoning_content="hmm", refusal=None),
        sse({"choices": [], "usage": {"total_tokens": 3}}),
        chat_chunk(finish="stop"),
        DONE,
    ]
    deltas, error, _ = llm_reply(Answer(steps))
    assert (deltas, error) == (["Sunny"], None)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (Answer([b"oops"], status=500), "The language model answered with an error."),
        (
            Answer([b'{"error": "bad key"}'], status=401),
            "The language model answered with an error.",
        ),
        (
            Answer(status=302, headers={"location": "http://127.0.0.1:1/elsewhere"}),
            "The language model answered with an error.",
        ),
        (
            Answer([chat_chunk("Hi"), sse(b"{not json")]),
            "The language model sent a reply that could not be read.",
        ),
        (
            Answer([sse({"choices": "many"})]),
            "The language model sent a reply that could not be read.",
        ),
        (
            Answer([b'{"choices": []}'], headers={"content-type": "application/json"}),
            "The language model sent a reply that could not be read.",
        ),
        (
            Answer([chat_chunk("Hi"), chat_chunk(" there")]),
            "The language model stopped before finishing its reply.",
        ),
        (
            Answer([chat_chunk("Hi"), HANG_UP]),
            "The language model stopped before finishing its reply.",
        ),
        (
            Answer([sse({"error": {"message": "overloaded"}})]),
            "The language model reported an error.",
        ),
        (Answer([chat_chunk(finish="stop"), DONE]), "The language model gave an empty reply."),
    ],
    ids=[
        "500",
        "401",
        "redirect",
        "bad-json",
        "bad-shape",
        "json-not-stream",
        "no-done",
        "hang-up",
        "error",
        "empty",
    ],
)
def test_language_model_failures_become_visitor_errors(answer, says):
    deltas, error, upstream = llm_reply(answer)
    assert isinstance(error, ResponderError)
    assert str(error) == says
    assert len(upstream.seen) == 1  # a redirect is not followed
    assert "".join(deltas) in ("", "Hi", "Hi there")  # what came before the fault stands


def test_the_api_key_stays_out_of_errors_and_logs(caplog):
    answer = Answer([f"Incorrect API key provided: {API_KEY}".encode()], status=401)
    with caplog.at_level(logging.WARNING, logger="service.responders"):
        _, error, _ = llm_reply(answer)
    assert API_KEY not in str(error)
    assert "HTTP 401" in caplog.text and "cnv_test" in caplog.text
    assert API_KEY not in caplog.text and "[redacted]" in caplog.text


def test_a_silent_upstream_times_out():
    async def scenario():
        answer = Answer(before_head=asyncio.Event())  # never set: no answer at all
        timeouts = Timeouts(connect=5.0, read=0.2, total=10.0)
        async with serving(answer, timeouts=timeouts) as (_, responders):
            return await reply_of(responders, request())

    deltas, error = asyncio.run(scenario())
    assert (deltas, str(error)) == ([], "The language model did not answer in time.")


@pytest.mark.parametrize(
    ("read", "total"), [(0.2, 60.0), (60.0, 0.3)], ids=["between-chunks", "whole-reply"]
)
def test_a_stalled_stream_times_out_after_its_first_deltas(read, total):
    async def scenario():
        answer = Answer([chat_chunk("Hel")], finish=False)
        timeouts = Timeouts(connect=5.0, read=read, total=total)
        async with serving(answer, timeouts=timeouts) as (_, responders):
            return await reply_of(responders, request())

    started = time.monotonic()
    deltas, error = asyncio.run(scenario())
    assert (deltas, str(error)) == (["Hel"], "The language model did not answer in time.")
    assert time.monotonic() - started < 30  # the shorter limit ended it, not the longer one


def test_an_unreachable_model_is_a_visitor_error():
    async def scenario(port: int):
        settings = Settings(llm_base_url=f"http://127.0.0.1:{port}/v1", llm_default_model="m")
        async with Responders(settings, timeouts=TIMEOUTS) as responders:
            return await reply_of(responders, request())

    with socket.socket() as bound:  # bound, never listening: connections to it are refused
        bound.bind(("127.0.0.1", 0))
        deltas, error = asyncio.run(scenario(bound.getsockname()[1]))
    assert (deltas, str(error)) == ([], "The language model could not be reached.")


def test_closing_a_reply_early_releases_the_upstream():
    async def scenario():
        answer = Answer([chat_chunk("Hel"), CLIENT_LEAVES], finish=False)
        async with serving(answer) as (upstream, responders):
            deltas = responders.responder_for(request()).reply(request())
            assert await anext(deltas) == "Hel"
            await deltas.aclose()  # the visitor left mid-reply
            await asyncio.wait_for(upstream.client_left.wait(), 10)

    asyncio.run(scenario())


# --- custom agents -----------------------------------------------------------------------


def test_ai_sdk_agent_streams_text_deltas_while_the_stream_is_open():
    async def scenario():
        more = asyncio.Event()
        steps = [
            ui("start", messageId="m1"),
            ui("start-step"),
            ui("text-start", id="t1"),
            ui("text-delta", id="t1", delta="Let me "),
            more,
            ui("text-delta", id="t1", delta="check."),
            ui("text-end", id="t1"),
            ui("reasoning-delta", id="r1", delta="thinking"),
            ui("tool-input-available", toolCallId="c1", toolName="weather", input={}),
            ui("tool-output-available", toolCallId="c1", output={"sky": "clear"}),
            ui("data-weather", data={"sky": "clear"}),
            ui("finish-step"),
            ui("start-step"),
            ui("text-start", id="t2"),
            ui("text-delta", id="t2", delta="Sunny."),
            ui("text-end", id="t2"),
            ui("finish-step"),
            ui("finish", finishReason="stop"),
            DONE,
        ]
        async with serving(Answer(steps), agent_settings) as (upstream, responders):
            req = agent_request(upstream.url("/agent"), instruction="not for the agent")
            deltas = responders.responder_for(req).reply(req)
            assert await anext(deltas) == "Let me "
            more.set()
            rest = [delta async for delta in deltas]
        assert rest == ["check.", "\n\n", "Sunny."]  # two text blocks, one reply
        return upstream.seen

    [seen] = asyncio.run(scenario())
    assert seen.path == "/agent"
    assert seen.headers["authorization"] == f"Bearer {AGENT_TOKEN}"
    assert seen.body == {
        "id": "cnv_test",
        "messages": [
            {
                "role": turn.role,
                "content": turn.text,
                "parts": [{"type": "text", "text": turn.text}],
            }
            for turn in HISTORY
        ],
    }


def test_ai_sdk_agent_reply_may_end_at_finish_without_done():
    steps = [ui("text-delta", id="t1", delta="Hi"), ui("finish")]
    assert agent_reply(Answer(steps))[:2] == (["Hi"], None)


@pytest.mark.parametrize(
    ("steps", "says"),
    [
        (
            [ui("text-delta", id="t", delta="Hi"), ui("error", errorText="boom")],
            "reported an error",
        ),
        ([ui("text-delta", id="t", delta="Hi"), ui("abort")], "stopped before finishing its reply"),
        ([ui("text-delta", id="t", delta="Hi")], "stopped before finishing its reply"),
        (
            [ui("text-delta", id="t", delta="Hi"), sse(b"[1, 2")],
            "sent a reply that could not be read",
        ),
        ([ui("text-delta", delta="Hi")], "sent a reply that could not be read"),
        ([ui("start"), ui("finish"), DONE], "gave an empty reply"),
    ],
    ids=["error-part", "abort", "no-finish", "bad-json", "delta-without-id", "empty"],
)
def test_ai_sdk_agent_failures_become_visitor_errors(steps, says, caplog):
    with caplog.at_level(logging.WARNING, logger="service.responders"):
        _, error, _ = agent_reply(Answer(steps))
    assert str(error) == f"The agent's service {says}."
    assert "boom" not in str(error)  # the agent's own error text is logged, not shown
    assert AGENT_TOKEN not in caplog.text


def test_openai_chat_agent_gets_a_streaming_request_and_is_read_as_chat_completions():
    answer = Answer([chat_chunk("Hi"), chat_chunk(" there", finish="stop"), DONE])
    deltas, error, upstream = agent_reply(answer, "openai_chat", llm_model="agent-model")
    assert (deltas, error) == (["Hi", " there"], None)
    [seen] = upstream.seen
    assert seen.headers["authorization"] == f"Bearer {AGENT_TOKEN}"
    assert seen.body == {
        "id": "cnv_test",
        "stream": True,
        "model": "agent-model",
        "messages": [{"role": turn.role, "content": turn.text} for turn in HISTORY],
    }


def test_agent_answering_with_an_error_status_is_a_visitor_error():
    _, error, _ = agent_reply(Answer([b"no"], status=503))
    assert str(error) == "The agent's service answered with an error."


def test_anything_unforeseen_still_ends_in_a_visitor_error(caplog):
    req = agent_request("http://127.0.0.1:9/agent", protocol="grpc")  # no such protocol
    _, error, _ = asyncio.run(answered(Answer(), agent_settings, lambda up: req))
    assert str(error) == "The agent's service could not answer."
    assert "Traceback" in caplog.text  # the log has the details


# --- the address rules of custom agents --------------------------------------------------


@pytest.mark.parametrize(
    "host_path",
    [
        "https://127.0.0.1:{port}/agent",
        "https://localhost:{port}/agent",
        "http://127.0.0.1:{port}/agent",
    ],
)
def test_private_agent_addresses_are_refused(host_path):
    """(Other tests allow them, with AVATAR_WEBHOOK_ALLOW_PRIVATE, to reach the fakes.)"""
    answer = Answer([ui("text-delta", id="t", delta="Hi"), DONE])
    deltas, error, upstream = asyncio.run(
        answered(
            answer,
            lambda up: Settings(),
            lambda up: agent_request(host_path.format(port=up.port)),
        )
    )
    assert (deltas, upstream.connections) == ([], 0)  # refused before connecting
    assert str(error) == "The agent's service is at an address this server may not call."


@pytest.fixture
def fake_dns(monkeypatch):
    """agent.example resolves to what the test puts in the returned dict."""
    answers: dict[str, list[str]] = {}

    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    monkeypatch.setattr(net, "resolve", resolve)
    return answers


def test_the_connection_goes_to_the_checked_address(fake_dns):
    fake_dns["agent.example"] = ["127.0.0.1"]
    steps = [ui("text-delta", id="t", delta="Hi"), ui("finish"), DONE]
    deltas, error, upstream = asyncio.run(
        answered(
            Answer(steps),
            agent_settings,
            lambda up: agent_request(up.url("/agent", host="agent.example")),
        )
    )
    assert (deltas, error) == (["Hi"], None)
    assert upstream.seen[0].headers["host"] == f"agent.example:{upstream.port}"


@pytest.mark.parametrize(
    "addresses",
    [["127.0.0.1"], ["93.184.216.34", "10.0.0.7"], ["64:ff9b::7f00:1"]],  # NAT64 to loopback
)
def test_a_host_resolving_to_any_private_address_is_refused(fake_dns, addresses):
    fake_dns["agent.example"] = addresses
    deltas, error, upstream = asyncio.run(
        answered(
            Answer(),
            lambda up: Settings(),
            lambda up: agent_request(f"https://agent.example:{up.port}/agent"),
        )
    )
    assert (deltas, upstream.connections) == ([], 0)
    assert str(error) == "The agent's service is at an address this server may not call."
