"""Speaking and listening in a live conversation (the socket frames of SPEC 14).

A reply is spoken sentence by sentence as its text streams: each sentence is synthesised as soon
as it is complete (its end is followed by more text, or the reply ends), so the first audio
leaves before the reply has finished. The visitor's voice comes as 16 kHz 16-bit mono PCM
between `listen` and `listen_end`, at most 30 seconds, and is answered as if it had been typed."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from service.domain.context import Context
from service.domain.errors import UpstreamError, ValidationFailed
from service.domain.speaking import complete_sentences
from service.domain.speech import STT_SAMPLE_RATE, SpeechFailed, Voice
from service.domain.turns import AgentMessage, ReplyDelta

MAX_UTTERANCE_S = 30
log = logging.getLogger("service.live")


@dataclass(frozen=True)
class SpokenSentence:
    """One sentence of a message, spoken: 16-bit mono PCM and its viseme timeline (ms from the
    start of this sentence's audio). `seq` counts the message's sentences from 1."""

    message_id: str
    seq: int
    sample_rate: int
    visemes: list[tuple[int, str]]
    pcm: bytes


class Speaker:
    """Speaks a conversation's messages with its voice."""

    def __init__(self, ctx: Context, voice: Voice) -> None:
        self._ctx, self._voice = ctx, voice

    async def speak(
        self, said: AsyncIterator[ReplyDelta | AgentMessage]
    ) -> AsyncIterator[ReplyDelta | AgentMessage | SpokenSentence]:
        """What `said` yields, with each sentence's speech after the text that completes it. A
        message that did not stream (the greeting) is spoken after it, whole. When speech
        fails, the rest of that message goes on as text alone (the failure is logged)."""
        pending, streamed, seq, silent = "", False, 0, None
        async for item in said:
            yield item
            if isinstance(item, ReplyDelta):
                streamed = True
                done, pending = complete_sentences(pending + item.text)
            else:
                done, pending = complete_sentences((pending if streamed else item.text) + " ")
                done.append(pending)
                pending, streamed = "", False
            for sentence in filter(str.strip, done):
                if silent == item.message_id:
                    break
                seq += 1
                try:
                    yield await self._say(item.message_id, seq, sentence)
                except SpeechFailed as exc:
                    log.warning("speech of message %s failed: %s", item.message_id, exc)
                    silent = item.message_id
            if isinstance(item, AgentMessage):
                seq = 0

    async def _say(self, message_id: str, seq: int, sentence: str) -> SpokenSentence:
        speech = await self._ctx.speech.synthesize(sentence, self._voice)
        return SpokenSentence(message_id, seq, speech.sample_rate, speech.visemes, speech.pcm)


class Utterance:
    """The visitor's voice being received: 16 kHz 16-bit mono PCM, at most MAX_UTTERANCE_S."""

    def __init__(self, sample_rate: int) -> None:
        if sample_rate != STT_SAMPLE_RATE:
            message = f"must be {STT_SAMPLE_RATE} (16-bit mono PCM)"
            raise ValidationFailed.field("sample_rate", message)
        self._pcm = bytearray()

    def add(self, pcm: bytes) -> None:
        if len(self._pcm) + len(pcm) > MAX_UTTERANCE_S * STT_SAMPLE_RATE * 2:
            raise ValidationFailed(f"An utterance lasts at most {MAX_UTTERANCE_S} seconds.")
        self._pcm += pcm

    async def transcribe(self, ctx: Context) -> str:
        """What was said (empty when nothing was heard)."""
        pcm = bytes(self._pcm[: len(self._pcm) // 2 * 2])
        if not pcm:
            return ""
        try:
            return (await ctx.speech.transcribe(pcm)).text
        except SpeechFailed as exc:
            raise UpstreamError(str(exc)) from None
