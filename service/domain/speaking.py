"""The speech endpoints (SPEC 14): text to speech with a profile's voice, and speech to text of
an uploaded recording. Each answer is recorded as usage (`tts`, `stt`: seconds of audio).

Text is spoken sentence by sentence, with `fragment_interval` seconds of silence between
sentences (the hosted API's option; 0.1 s by default). A `file_url` answer is kept like an
upscale's result: readable through a signed link until AVATAR_RESULT_TTL_S, then removed by
the sweeper (`remove_old_speech`)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import engine
from service.domain import voices
from service.domain.context import Context
from service.domain.errors import (
    InvalidAudio,
    ResultExpired,
    UpstreamError,
    UrlExpired,
    ValidationFailed,
)
from service.domain.ids import new_id
from service.domain.models import UsageRecord
from service.domain.signing import signed_path, verified_expiry
from service.domain.speech import BUILT_IN, STT_SAMPLE_RATE, Speech, SpeechFailed, Transcript, Voice

MAX_TEXT = 10_000
MAX_STT_BYTES = 20 * 1000 * 1000
MAX_STT_S = 600.0
DEFAULT_FRAGMENT_INTERVAL_S = 0.1
RETURN_TYPES = ("b64_audio_str", "file_url")
_AUDIO_ALLOWED = (
    "Send a recording in a common format (WAV, MP3, Ogg, WebM, M4A, FLAC)"
    f" of at most {MAX_STT_S:g} s."
)
CHINESE = {"mandarin": "cmn", "yue": "yue"}
SPEECH_FILES = "speech/"
SPEECH_PATH = "/files/speech/{speech_id}/audio.wav"
# A sentence ends at . ! ? (or their CJK forms) followed by a space or the end.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_CJK = re.compile(r"[\u3400-\u9fff]")


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (each stripped; none empty)."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def complete_sentences(text: str) -> tuple[list[str], str]:
    """The sentences of a text still being written that are surely complete (their end is
    followed by more text), and the rest, which may still grow."""
    ends = list(_SENTENCE_END.finditer(text))
    if not ends:
        return [], text
    cut = ends[-1].end()
    return sentences(text[:cut]), text[cut:]


@dataclass(frozen=True)
class SpeechRequest:
    text: str
    voice_profile_id: str
    return_type: str
    fragment_interval_s: float = DEFAULT_FRAGMENT_INTERVAL_S
    chinese_language: str = "yue"


@dataclass(frozen=True)
class Spoken:
    speech_id: str
    voice_profile_id: str
    wav: bytes
    duration_s: float
    file_path: str | None  # the signed path of a `file_url` answer


def _chinese(voice: Voice, text: str, dialect: str) -> Voice:
    """A built-in voice speaking Chinese text takes the dialect asked for, keeping its settings."""
    if voice.engine != BUILT_IN or not _CJK.search(text):
        return voice
    variant = voice.name.partition("+")[2]
    name = CHINESE[dialect] + (f"+{variant}" if variant else "")
    return Voice(voice.engine, name, voice.pitch, voice.pitch_range, voice.rate)


async def synthesize(ctx: Context, text: str, voice: Voice, pause_s: float) -> Speech:
    """`text` spoken sentence by sentence with `pause_s` of silence between sentences."""
    pcm, rate, cues = bytearray(), 0, []
    for index, sentence in enumerate(sentences(text)):
        try:
            speech = await ctx.speech.synthesize(sentence, voice)
        except SpeechFailed as exc:
            raise UpstreamError(str(exc)) from None
        if index and speech.sample_rate == rate:
            pcm += bytes(2 * round(pause_s * rate))
        offset_ms = round(len(pcm) / 2 / speech.sample_rate * 1000)
        rate = speech.sample_rate
        cues += [(at + offset_ms, name) for at, name in speech.visemes]
        pcm += speech.pcm
    if not rate:
        raise ValidationFailed.field("text", "has nothing to say")
    return Speech(bytes(pcm), rate, cues)


async def text_to_speech(ctx: Context, owner_id: str, request: SpeechRequest) -> Spoken:
    profile_id = request.voice_profile_id
    profile = await voices.usable_profile(ctx, owner_id, profile_id, "voice_profile_id")
    voice = _chinese(profile.voice, request.text, request.chinese_language)
    started = ctx.clock.now_ms()
    speech = await synthesize(ctx, request.text, voice, request.fragment_interval_s)
    wav = engine.wav_bytes(speech.pcm, speech.sample_rate)
    speech_id = new_id("sp")
    path = None
    if request.return_type == "file_url":
        await ctx.files.put(speech_key(speech_id), wav)
        path = _link(ctx, speech_id)
    await _record(ctx, owner_id, "tts", speech_id, started, speech.duration_s)
    return Spoken(speech_id, profile.profile_id, wav, round(speech.duration_s, 3), path)


@dataclass(frozen=True)
class Heard:
    request_id: str
    duration_s: float
    transcript: Transcript


async def speech_to_text(ctx: Context, owner_id: str, audio: bytes) -> Heard:
    if len(audio) > MAX_STT_BYTES:
        raise ValidationFailed.field("audio", f"must be at most {MAX_STT_BYTES:,} bytes decoded")
    started = ctx.clock.now_ms()
    try:
        decoded = await asyncio.to_thread(engine.decode_audio, audio, STT_SAMPLE_RATE, MAX_STT_S)
    except engine.InvalidAudio as exc:
        raise InvalidAudio(f"audio: {exc.message} {_AUDIO_ALLOWED}") from None
    try:
        transcript = await ctx.speech.transcribe(decoded.pcm)
    except SpeechFailed as exc:
        raise UpstreamError(str(exc)) from None
    request_id = new_id("sp")
    await _record(ctx, owner_id, "stt", request_id, started, decoded.duration_s)
    return Heard(request_id, round(decoded.duration_s, 3), transcript)


async def _record(
    ctx: Context, owner_id: str, kind: str, ref_id: str, started_ms: int, seconds: float
) -> None:
    seconds = round(seconds, 3)
    usage = UsageRecord(
        new_id("usg"), owner_id, kind, ref_id, started_ms, ctx.clock.now_ms(), seconds, seconds
    )
    await ctx.store.add_usage(usage)


def speech_key(speech_id: str) -> str:
    return f"{SPEECH_FILES}{speech_id}.wav"


def _link(ctx: Context, speech_id: str) -> str:
    """Signed for AVATAR_URL_TTL_S, never past AVATAR_RESULT_TTL_S (when the file goes)."""
    ttl_s = min(ctx.settings.url_ttl_s, ctx.settings.result_ttl_s)
    expires_s = (ctx.clock.now_ms() + round(ttl_s * 1000)) // 1000
    return signed_path(ctx.signing_key, SPEECH_PATH.format(speech_id=speech_id), expires_s)


async def speech_file(
    ctx: Context, speech_id: str, expires: str | None, signature: str | None
) -> tuple[str, int]:
    """(file-store key, size) of the WAV a signed link names: SignatureInvalid, then
    ResultExpired once the file is removed, then UrlExpired."""
    path = SPEECH_PATH.format(speech_id=speech_id)
    expires_s = verified_expiry(ctx.signing_key, path, expires, signature)
    size = await ctx.files.size(speech_key(speech_id))
    if size is None:
        raise ResultExpired(f"The audio {speech_id} is no longer kept (AVATAR_RESULT_TTL_S).")
    if ctx.clock.now_ms() >= expires_s * 1000:
        raise UrlExpired("This link has expired.")
    return speech_key(speech_id), size


async def remove_old_speech(ctx: Context) -> None:
    """The sweeper's part: speech files older than AVATAR_RESULT_TTL_S."""
    cutoff = ctx.clock.now_ms() - round(ctx.settings.result_ttl_s * 1000)
    for key in await ctx.files.stale(SPEECH_FILES, cutoff):
        await ctx.files.delete(key)
