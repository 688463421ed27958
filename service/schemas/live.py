"""The frames of the conversation sockets (see `service.api.live`)."""

from __future__ import annotations

from typing import Literal

import msgspec


class VisitorMessage(msgspec.Struct, tag_field="type", tag="message", frozen=True):
    text: str | None = None


class Ping(msgspec.Struct, tag_field="type", tag="ping", frozen=True):
    pass


class ListenStart(msgspec.Struct, tag_field="type", tag="listen", frozen=True):
    sample_rate: int = 16_000


class ListenEnd(msgspec.Struct, tag_field="type", tag="listen_end", frozen=True):
    pass


ClientFrame = VisitorMessage | Ping | ListenStart | ListenEnd


class StateFrame(msgspec.Struct, tag_field="type", tag="state", omit_defaults=True):
    state: Literal["connecting", "ready", "ended"]
    reason: str | None = None


class DeltaFrame(msgspec.Struct, tag_field="type", tag="delta"):
    id: str
    text: str


class MessageFrame(msgspec.Struct, tag_field="type", tag="message"):
    id: str
    text: str
    role: Literal["assistant"] = "assistant"


class ErrorFrame(msgspec.Struct, tag_field="type", tag="error"):
    message: str


class PongFrame(msgspec.Struct, tag_field="type", tag="pong"):
    pass


class SpeechFrame(msgspec.Struct, tag_field="type", tag="speech"):
    """Precedes one binary frame: the sentence's 16-bit little-endian mono PCM."""

    message_id: str
    seq: int
    sample_rate: int
    visemes: list[tuple[int, str]]


class TranscriptFrame(msgspec.Struct, tag_field="type", tag="transcript"):
    text: str
