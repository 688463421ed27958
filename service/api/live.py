"""The conversation sockets /r/{route_id}/ws and /i/{session_id}/ws: JSON frames both ways.

Visitor -> service: {"type": "message", "text"} (1..4,000 characters) and {"type": "ping"}.
Service -> visitor: {"type": "state", "state": connecting|ready|ended, "reason"?}, the agent's
greeting and each reply as {"type": "message", "id", "role": "assistant", "text"} (a reply's
text first streamed as {"type": "delta", "id", "text"} frames), {"type": "pong"}, and
{"type": "error", "message"} for anything that cannot be taken (the conversation goes on).

No socket opens for a link that admits nobody; an open one gets `state: ended` with the reason
and is closed as soon as its route or session ends (see `service.domain.live`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import msgspec
from litestar import WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect

from service.domain import conversations, turns
from service.domain.context import Context
from service.domain.conversations import Setup
from service.domain.errors import ValidationFailed
from service.domain.live import LiveConversations
from service.domain.turns import AgentMessage, Live, ReplyDelta
from service.responders import ResponderError
from service.schemas.live import (
    ClientFrame,
    DeltaFrame,
    ErrorFrame,
    MessageFrame,
    Ping,
    PongFrame,
    StateFrame,
    VisitorMessage,
)

log = logging.getLogger("service.live")

# A frame longer than this cannot hold a valid message; it is refused without being parsed.
MAX_FRAME_CHARS = 64 * 1024
# Messages a visitor may send ahead while a reply is still streaming.
MAX_WAITING = 8
# How often a socket waiting for its session to warm up looks again.
WARM_UP_POLL_S = 0.25

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(ClientFrame).decode


@websocket("/r/{route_id:str}/ws")
async def route_socket(socket: WebSocket, route_id: str) -> None:
    ctx = socket.app.state["ctx"]
    await _converse(ctx, socket, await conversations.admit_route(ctx, route_id))


@websocket("/i/{session_id:str}/ws")
async def session_socket(socket: WebSocket, session_id: str, token: str | None = None) -> None:
    ctx = socket.app.state["ctx"]
    await _converse(ctx, socket, await conversations.admit_session(ctx, session_id, token))


async def _converse(ctx: Context, socket: WebSocket, setup: Setup | None) -> None:
    if setup is None:
        await socket.receive()  # the handshake, refused: nothing opens for this link
        await socket.close(code=4404, reason="this link admits no conversation")
        return
    await socket.accept()
    live = await turns.open_conversation(ctx, setup)
    conversation = _Conversation(ctx, socket, live)
    watch: LiveConversations = socket.app.state["live"]
    reason = "closed"
    try:
        await watch.watch(live, conversation.end)
        reason = await conversation.run()
    finally:
        watch.forget(live)
        await turns.end_conversation(ctx, live, reason)


class _Conversation:
    """One socket's conversation: a reader task queues the visitor's frames, the main loop
    answers them in order, and `end` (from the watch) interrupts both."""

    def __init__(self, ctx: Context, socket: WebSocket, live: Live) -> None:
        self._ctx, self._socket, self._live = ctx, socket, live
        self._inbox: asyncio.Queue[str] = asyncio.Queue()
        self._ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def end(self, reason: str) -> None:
        if not self._ended.done():
            self._ended.set_result(reason)

    async def run(self) -> str:
        """Talk until the visitor leaves ("closed") or the conversation ends (its reason)."""
        reader = asyncio.ensure_future(self._read())
        try:
            await self._until_ended(self._open())
            while not self._ended.done():
                text = await self._until_ended(self._inbox.get())
                if text is not None:
                    await self._until_ended(self._answer(text))
        except WebSocketDisconnect:
            self.end("closed")
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
                await reader
        reason = self._ended.result()
        if reason != "closed":
            with contextlib.suppress(Exception):  # the visitor may be gone already
                await self._send(StateFrame(state="ended", reason=reason))
                await self._socket.close(code=1000, reason=reason[:100])
        return reason

    async def _until_ended(self, work):
        """Run `work` unless the conversation ends first (then it is cancelled)."""
        task = asyncio.ensure_future(work)
        done, _ = await asyncio.wait({task, self._ended}, return_when=asyncio.FIRST_COMPLETED)
        if task not in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return None
        return task.result()

    async def _read(self) -> None:
        try:
            while True:
                text = await self._socket.receive_text()
                if self._inbox.qsize() >= MAX_WAITING:
                    await self._send(ErrorFrame(message="Wait for the reply before sending more."))
                else:
                    self._inbox.put_nowait(text)
        except WebSocketDisconnect:
            self.end("closed")

    async def _open(self) -> None:
        if self._live.setup.session_id is not None:
            await self._send(StateFrame(state="connecting"))
            while await conversations.session_state(self._ctx, self._live.setup) != "ready":
                await asyncio.sleep(WARM_UP_POLL_S)
        await self._send(StateFrame(state="ready"))
        if greeting := await turns.greet(self._ctx, self._live):
            await self._send(_agent_frame(greeting))

    async def _answer(self, raw: str) -> None:
        frame = _frame(raw)
        if isinstance(frame, str):
            await self._send(ErrorFrame(message=frame))
        elif isinstance(frame, Ping):
            await self._send(PongFrame())
        else:
            try:
                async for said in turns.take_turn(self._ctx, self._live, frame.text):
                    await self._send(_agent_frame(said))
            except (ValidationFailed, ResponderError) as exc:
                await self._send(ErrorFrame(message=str(exc)))

    async def _send(self, frame: msgspec.Struct) -> None:
        await self._socket.send_text(_encode(frame).decode())


def _agent_frame(said: ReplyDelta | AgentMessage) -> DeltaFrame | MessageFrame:
    if isinstance(said, ReplyDelta):
        return DeltaFrame(id=said.message_id, text=said.text)
    return MessageFrame(id=said.message_id, text=said.text)


def _frame(raw: str) -> VisitorMessage | Ping | str:
    """The visitor's frame, or why it cannot be taken."""
    if len(raw) > MAX_FRAME_CHARS:
        return f"A frame is at most {MAX_FRAME_CHARS} characters."
    try:
        return _decode(raw)
    except msgspec.DecodeError:
        return 'Send {"type": "message", "text": "..."} or {"type": "ping"}.'
