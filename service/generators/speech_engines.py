"""A process's speech engines, chosen by its settings: the built-in eSpeak NG always (cloned
voices are matched onto it), an OpenAI-compatible text to speech beside it when
AVATAR_TTS_BASE_URL is set, and speech to text by AVATAR_STT_BASE_URL or else PocketSphinx."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from service.domain.speech import SpeechEngines
from service.generators.espeak import EspeakSpeech
from service.generators.openai_speech import TIMEOUT, BackendListener, BackendSpeech
from service.generators.sphinx import SphinxListener
from service.settings import Settings


@asynccontextmanager
async def open_speech(settings: Settings) -> AsyncIterator[SpeechEngines]:
    """The engines, and on exit their backend connections closed and the recognizer's worker
    process stopped. The operator's own endpoints (often on a private network) are called
    without the address checks that owners' URLs get."""
    async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as client:
        backend = None
        if settings.tts_base_url:
            backend = BackendSpeech(
                client,
                settings.tts_base_url,
                settings.tts_api_key,
                settings.tts_model,
                settings.tts_voices,
            )
        sphinx = None
        if settings.stt_base_url:
            listener = BackendListener(
                client, settings.stt_base_url, settings.stt_api_key, settings.stt_model
            )
        else:
            listener = sphinx = SphinxListener()
        try:
            yield SpeechEngines(EspeakSpeech(), backend, listener)
        finally:
            if sphinx is not None:
                await asyncio.to_thread(sphinx.close)
