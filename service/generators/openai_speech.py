"""OpenAI-compatible speech backends, for operators who run a better model than the built-ins:
text to speech by `POST {AVATAR_TTS_BASE_URL}/audio/speech` (what Piper, Kokoro and XTTS
servers serve) and speech to text by `POST {AVATAR_STT_BASE_URL}/audio/transcriptions` (what
whisper servers serve). Each base URL is the API's root, e.g. `http://127.0.0.1:8880/v1`.

A backend sends no phoneme timing, so the visemes of its speech are the built-in engine's
timing of the same text, stretched to the backend audio's length: the mouth follows the words
closely though not to the phoneme."""

from __future__ import annotations

import asyncio
import io

import httpx
import msgspec

import engine
from service.domain import visemes
from service.domain.speech import (
    BACKEND,
    STT_SAMPLE_RATE,
    PremadeVoice,
    Segment,
    Speech,
    SpeechFailed,
    Transcript,
    Voice,
)
from service.generators import espeak
from service.generators.backend_http import bearer, post_for_bytes

TIMEOUT = httpx.Timeout(connect=5.0, read=60.0, write=60.0, pool=60.0)
# The longest answer read from a backend (ten minutes of 48 kHz stereo WAV is 110 MB).
MAX_ANSWER_BYTES = 128 * 1024 * 1024
MAX_AUDIO_S = 600.0


async def _post(client: httpx.AsyncClient, url: str, what: str, **kwargs) -> bytes:
    return await post_for_bytes(client, url, what, SpeechFailed, MAX_ANSWER_BYTES, **kwargs)


class BackendSpeech:
    """`service.domain.speech.TextToSpeech` on an OpenAI-compatible `/audio/speech`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: str | None,
        model: str,
        voices: tuple[str, ...],
    ) -> None:
        self._client, self._url = client, base_url.rstrip("/") + "/audio/speech"
        self._headers, self._model, self._voices = bearer(api_key), model, voices

    def premade(self) -> tuple[PremadeVoice, ...]:
        described = ((name, f"The speech backend's voice {name!r}.") for name in self._voices)
        return tuple(
            PremadeVoice(f"tts-{name}", name, about, (), Voice(BACKEND, name))
            for name, about in described
        )

    async def synthesize(self, text: str, voice: Voice) -> Speech:
        body = {"model": self._model, "input": text, "voice": voice.name, "response_format": "wav"}
        audio = await _post(self._client, self._url, "speech", json=body, headers=self._headers)
        return await asyncio.to_thread(_speech_of, text, audio)


def _speech_of(text: str, audio: bytes) -> Speech:
    try:
        decoded = engine.decode_audio(audio, None, MAX_AUDIO_S)
    except engine.InvalidAudio as exc:
        raise SpeechFailed(f"The speech backend's audio cannot be used: {exc.message}") from None
    timing = espeak.speak(text, espeak.EspeakSpeech().premade()[0].voice)
    factor = decoded.duration_s / timing.duration_s if timing.duration_s else 1.0
    return Speech(decoded.pcm, decoded.sample_rate, visemes.scaled(timing.visemes, factor))


class BackendListener:
    """`service.domain.speech.SpeechToText` on an OpenAI-compatible `/audio/transcriptions`
    (asking for `verbose_json`, whose segments carry their times; a server that answers only
    `text` gets one segment covering the whole audio)."""

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str | None, model: str
    ) -> None:
        self._client, self._url = client, base_url.rstrip("/") + "/audio/transcriptions"
        self._headers, self._model = bearer(api_key), model

    async def transcribe(self, pcm: bytes) -> Transcript:
        wav = engine.wav_bytes(pcm, STT_SAMPLE_RATE)
        data = {"model": self._model, "response_format": "verbose_json"}
        files = {"file": ("speech.wav", io.BytesIO(wav), "audio/wav")}
        answer = await _post(
            self._client, self._url, "transcription", data=data, files=files, headers=self._headers
        )
        return _transcript_of(answer, len(pcm) / 2 / STT_SAMPLE_RATE)


def _transcript_of(answer: bytes, duration_s: float) -> Transcript:
    try:
        body = msgspec.json.decode(answer)
        text = body["text"]
        if not isinstance(text, str):
            raise TypeError
        segments = [
            Segment(float(item["start"]), float(item["end"]), str(item["text"]).strip())
            for item in body.get("segments") or ()
        ]
    except (msgspec.DecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise SpeechFailed("The transcription backend's answer is not a transcription.") from None
    text = text.strip()
    if not segments and text:
        segments = [Segment(0.0, round(duration_s, 3), text)]
    return Transcript(text, segments)
