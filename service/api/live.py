"""The conversation sockets /r/{route_id}/ws and /i/{session_id}/ws: JSON frames both ways.

Visitor -> service: {"type": "message", "text"} (1..4,000 characters) and {"type": "ping"}; and
voice: {"type": "listen", "sample_rate": 16000}, binary frames of 16-bit mono PCM, then
{"type": "listen_end"} (at most 30 s), answered with {"type": "transcript", "text"} and then as
if the text had been typed.
Service -> visitor: {"type": "state", "state": connecting|ready|ended, "reason"?}, the agent's
greeting and each reply as {"type": "message", "id", "role": "assistant", "text"} (a reply's
text first streamed as {"type": "delta", "id", "text"} frames), {"type": "pong"}, and
{"type": "error", "message"} for anything that cannot be taken (the conversation goes on). On a
socket opened with `?speech=1` (the pages' own) each agent message is also spoken, sentence by
sentence as its text arrives: {"type": "speech",
"message_id", "seq", "sample_rate", "visemes"} followed by one binary frame of the sentence's
16-bit little-endian mono PCM (`service.domain.voice_turns`).

No socket opens for a link that admits nobody. A socket past a cap (`service.domain.socket_caps`)
opens only to get `state: ended` with the reason and close 1013; a frame over MAX_FRAME_BYTES
ends the conversation with close 1009. An open one gets `state: ended` with the reason and is
closed as soon as its route or session ends (see `service.domain.live`)."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec
from litestar import WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect

from service.api.proxies import client_address
from service.domain import conversations, socket_caps, turns, voices
from service.domain.context import Context
from service.domain.conversations import Setup
from service.domain.errors import UpstreamError, ValidationFailed
from service.domain.live import LiveConversations
from service.domain.socket_caps import ROUTE_FULL, TOO_MANY_SOCKETS
from service.domain.turns import AgentMessage, Live, ReplyDelta
from service.domain.voice_turns import Speaker, SpokenSentence, Utterance
from service.responders import ResponderError
from service.schemas.live import (
    ClientFrame,
    DeltaFrame,
    ErrorFrame,
    ListenEnd,
    ListenStart,
    MessageFrame,
    Ping,
    PongFrame,
    SpeechFrame,
    StateFrame,
    TranscriptFrame,
    VisitorMessage,
)

# The largest frame a visitor may send, text or binary. The longest valid text frame is a
# 4,000-character message of characters outside the BMP, each escaped as a \\uXXXX\\uXXXX pair:
# 48,000 bytes and the envelope. A binary frame carries voice (16 kHz 16-bit mono PCM, 32,000
# bytes a second, in chunks): 64 KiB is two seconds of it, where browsers send a few hundred
# milliseconds per chunk. A larger frame ends the conversation with close code 1009.
MAX_FRAME_BYTES = 64 * 1024
FRAME_TOO_LARGE = "frame_too_large"
# How a socket closes when its conversation ends for a reason of the visitor's making; any
# other end is a normal closure (1000).
_CLOSE_CODES = {FRAME_TOO_LARGE: 1009, TOO_MANY_SOCKETS: 1013, ROUTE_FULL: 1013}
# Messages a visitor may send ahead while a reply is still streaming.
MAX_WAITING = 8
# How often a socket waiting for its session to warm up looks again.
WARM_UP_POLL_S = 0.25

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(ClientFrame).decode


@websocket("/r/{route_id:str}/ws")
async def route_socket(socket: WebSocket, route_id: str, speech: bool = False) -> None:
    ctx = socket.app.state["ctx"]
    await _converse(ctx, socket, await conversations.admit_route(ctx, route_id), speech)


@websocket("/i/{session_id:str}/ws")
async def session_socket(
    socket: WebSocket, session_id: str, token: str | None = None, speech: bool = False
) -> None:
    ctx = socket.app.state["ctx"]
    setup = await conversations.admit_session(ctx, session_id, token)
    await _converse(ctx, socket, setup, speech)


async def _converse(ctx: Context, socket: WebSocket, setup: Setup | None, speech: bool) -> None:
    """`speech`: the visitor asked (`?speech=1`) for each agent message spoken as well."""
    if setup is None:
        await socket.receive()  # the handshake, refused: nothing opens for this link
        await socket.close(code=4404, reason="this link admits no conversation")
        return
    watch: LiveConversations = socket.app.state["live"]
    async with watch.serving():
        live = turns.new_conversation(ctx, setup)
        client = client_address(socket.scope, ctx.settings.trusted_proxies)
        if refused := await socket_caps.hold(ctx, live, client):
            await socket.accept()
            await _farewell(socket, refused)
            return
        try:
            await _converse_on(ctx, socket, watch, live, speech)
        finally:
            await socket_caps.release(ctx, live)


async def _converse_on(
    ctx: Context, socket: WebSocket, watch: LiveConversations, live: Live, speech: bool
) -> None:
    await socket.accept()
    await turns.open_conversation(ctx, live)
    conversation = _Conversation(ctx, socket, live, speech)
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

    def __init__(self, ctx: Context, socket: WebSocket, live: Live, speech: bool) -> None:
        self._ctx, self._socket, self._live, self._speech = ctx, socket, live, speech
        # Decoded frames (or why one cannot be taken), and finished utterances, in order.
        self._inbox: asyncio.Queue[VisitorMessage | Ping | Utterance | str] = asyncio.Queue()
        self._ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._speaker: Speaker | None = None  # when the visitor asked for speech
        self._utterance: Utterance | None = None  # the visitor's voice being received

    def end(self, reason: str) -> None:
        if not self._ended.done():
            self._ended.set_result(reason)

    async def run(self) -> str:
        """Talk until the visitor leaves ("closed") or the conversation ends (its reason)."""
        reader = asyncio.ensure_future(self._read())
        try:
            await self._until_ended(self._open())
            while not self._ended.done():
                frame = await self._until_ended(self._inbox.get())
                if frame is not None:
                    await self._until_ended(self._answer(frame))
        except WebSocketDisconnect:
            self.end("closed")
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
                await reader
        reason = self._ended.result()
        if reason != "closed":
            await _farewell(self._socket, reason)
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
                event = await self._socket.receive()
                if event["type"] == "websocket.disconnect":
                    break
                text, data = event.get("text"), event.get("bytes")
                if _too_large(text if text is not None else data or b""):
                    self.end(FRAME_TOO_LARGE)
                    return
                await self._take(text, data)
        except WebSocketDisconnect:
            pass
        self.end("closed")

    async def _take(self, text: str | None, data: bytes | None) -> None:
        """A frame as it arrives: voice is gathered here (so it is never held up behind a
        reply); everything else waits its turn in the inbox."""
        frame = _frame(text) if text is not None else data or b""
        try:
            if isinstance(frame, bytes):
                if self._utterance is None:
                    raise ValidationFailed('Send {"type": "listen"} before the voice.')
                self._utterance.add(frame)
            elif isinstance(frame, ListenStart):
                self._utterance = Utterance(frame.sample_rate)
            elif self._inbox.qsize() >= MAX_WAITING:
                await self._send(ErrorFrame(message="Wait for the reply before sending more."))
            elif isinstance(frame, ListenEnd):
                if self._utterance is None:
                    raise ValidationFailed('Send {"type": "listen"} and the voice first.')
                self._inbox.put_nowait(self._utterance)
                self._utterance = None
            else:
                self._inbox.put_nowait(frame)
        except ValidationFailed as exc:
            self._utterance = None
            await self._send(ErrorFrame(message=str(exc)))

    async def _open(self) -> None:
        if self._live.setup.session_id is not None:
            await self._send(StateFrame(state="connecting"))
            while await conversations.session_state(self._ctx, self._live.setup) != "ready":
                await asyncio.sleep(WARM_UP_POLL_S)
        if self._speech:
            setup = self._live.setup
            voice = await voices.voice_for(self._ctx, setup.owner_id, setup.voice_id)
            self._speaker = Speaker(self._ctx, voice)
        await self._send(StateFrame(state="ready"))
        if greeting := await turns.greet(self._ctx, self._live):
            await self._relay(_one(greeting))

    async def _answer(self, frame: VisitorMessage | Ping | Utterance | str) -> None:
        if isinstance(frame, str):
            await self._send(ErrorFrame(message=frame))
        elif isinstance(frame, Ping):
            await self._send(PongFrame())
        else:
            try:
                # A typed message is checked by the turn; an utterance that held no words
                # was answered already (by _heard).
                text = frame.text if isinstance(frame, VisitorMessage) else await self._heard(frame)
                if isinstance(frame, VisitorMessage) or text:
                    await self._relay(turns.take_turn(self._ctx, self._live, text))
            except (ValidationFailed, ResponderError, UpstreamError) as exc:
                await self._send(ErrorFrame(message=str(exc)))

    async def _heard(self, utterance: Utterance) -> str:
        text = await utterance.transcribe(self._ctx)
        await self._send(TranscriptFrame(text=text))
        if not text:
            await self._send(ErrorFrame(message="Nothing was heard; please try again."))
        return text

    async def _relay(self, said) -> None:
        """Send what a turn says, each sentence's speech after the text that completes it."""
        if self._speaker is not None:
            said = self._speaker.speak(said)
        async for item in said:
            if isinstance(item, SpokenSentence):
                frame = SpeechFrame(item.message_id, item.seq, item.sample_rate, item.visemes)
                await self._send(frame)
                await self._socket.send_bytes(item.pcm)
            else:
                await self._send(_agent_frame(item))

    async def _send(self, frame: msgspec.Struct) -> None:
        await self._socket.send_text(_encode(frame).decode())


async def _one(message: AgentMessage):
    yield message


def _agent_frame(said: ReplyDelta | AgentMessage) -> DeltaFrame | MessageFrame:
    if isinstance(said, ReplyDelta):
        return DeltaFrame(id=said.message_id, text=said.text)
    return MessageFrame(id=said.message_id, text=said.text)


async def _farewell(socket: WebSocket, reason: str) -> None:
    """Tell the visitor why the conversation ends (or never began), and close the socket."""
    with contextlib.suppress(Exception):  # the visitor may be gone already
        await socket.send_text(_encode(StateFrame(state="ended", reason=reason)).decode())
        await socket.close(code=_CLOSE_CODES.get(reason, 1000), reason=reason[:100])


def _too_large(payload: str | bytes) -> bool:
    # A text's UTF-8 size is at least its length: most frames are settled without encoding.
    if len(payload) > MAX_FRAME_BYTES:
        return True
    return isinstance(payload, str) and len(payload.encode()) > MAX_FRAME_BYTES


def _frame(raw: str) -> VisitorMessage | Ping | ListenStart | ListenEnd | str:
    """The visitor's frame, or why it cannot be taken."""
    try:
        return _decode(raw)
    except msgspec.DecodeError:
        return 'Send {"type": "message", "text": "..."} or {"type": "ping"}.'
