"""The speech engines on generated speech: eSpeak NG (audio, its events, its global settings),
PocketSphinx (words and their times), and the OpenAI-compatible backends against a fake
server; and the viseme table they share."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import engine
from service.domain import visemes
from service.domain.speech import (
    BACKEND,
    BUILT_IN,
    STT_SAMPLE_RATE,
    SpeechFailed,
    Transcript,
    Voice,
)
from service.generators import espeak, sphinx
from service.generators.openai_speech import BackendListener, BackendSpeech
from tests.service.fake_speech import MS_PER_CHARACTER, TONE_RATE, FakeSpeech

SENTENCE = "Hello world, this is a test of the speaking avatar."
ALEX = Voice(BUILT_IN, "en-us")

# --- the viseme table -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phoneme", "shapes"),
    [
        ("tʃ", ["CH"]),  # an affricate is one shape, not DD then CH
        ("aɪ", ["aa", "ih"]),  # a diphthong passes through two
        ("ˈɜː", ["E"]),  # stress and length marks change nothing
        ("iː", ["ih"]),
        ("m", ["PP"]),
        ("", []),
        ("ˈ", []),
    ],
)
def test_phonemes_map_to_their_shapes(phoneme, shapes):
    assert visemes.visemes_of_phoneme(phoneme) == shapes


def test_a_timeline_starts_and_ends_at_rest_with_no_repeats():
    cues = visemes.timeline([(0, ""), (10, "h"), (50, "aɪ"), (150, "m"), (200, "")], 300)
    assert cues == [(0, "sil"), (10, "kk"), (50, "aa"), (100, "ih"), (150, "PP"), (200, "sil")]
    assert visemes.viseme_at(cues, 120) == "ih"
    assert visemes.scaled(cues, 2.0)[-1] == (400, "sil")


# --- eSpeak NG --------------------------------------------------------------------------------


def test_espeak_audio_decodes_and_lasts_as_long_as_its_events_say():
    speech = espeak.speak(SENTENCE, ALEX)
    assert speech.sample_rate == espeak.SAMPLE_RATE == 22_050
    decoded = engine.decode_audio(engine.wav_bytes(speech.pcm, speech.sample_rate), None, 60)
    assert decoded.sample_rate == 22_050 and decoded.pcm == speech.pcm
    # The mouth closes as the sound ends, and moves in between.
    closes_ms, rest = speech.visemes[-1]
    assert rest == "sil" and speech.duration_s * 1000 - 250 < closes_ms <= speech.duration_s * 1000
    shapes = {name for _, name in speech.visemes}
    assert shapes <= set(visemes.VISEMES) and len(shapes) >= 8
    starts = [at for at, _ in speech.visemes]
    assert starts == sorted(starts)
    # The loudest stretch of the audio falls where the mouth is open (not at rest).
    samples = np.frombuffer(speech.pcm, "<i2").astype(np.float64)
    frames = np.abs(samples[: len(samples) // 441 * 441]).reshape(-1, 441).mean(axis=1)
    loudest_ms = int(np.argmax(frames)) * 20 + 10
    assert visemes.viseme_at(speech.visemes, loudest_ms) != "sil"


def test_espeak_settings_are_set_on_every_call():
    """Rate and pitch are global to the library: a fast call must not leave the next one fast."""
    plain = espeak.speak(SENTENCE, ALEX)
    fast = espeak.speak(SENTENCE, Voice(BUILT_IN, "en-us", rate=350, pitch=90))
    again = espeak.speak(SENTENCE, ALEX)
    assert fast.duration_s < plain.duration_s * 0.7
    # (eSpeak NG varies a call's length by a few samples, so equal means within 5 ms.)
    assert again.duration_s == pytest.approx(plain.duration_s, abs=0.005)
    assert _shapes(again) == _shapes(plain)


def _shapes(speech) -> list[str]:
    return [name for _, name in speech.visemes]


def test_espeak_calls_from_many_threads_are_serialised():
    voices = [ALEX, Voice(BUILT_IN, "en-us+f3", rate=250), Voice(BUILT_IN, "en", pitch=20)]
    alone = [espeak.speak(SENTENCE, voice) for voice in voices] * 4
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(lambda v: espeak.speak(SENTENCE, v), voices * 4))
    for one, other in zip(alone, together, strict=True):
        assert _shapes(other) == _shapes(one)
        assert other.duration_s == pytest.approx(one.duration_s, abs=0.005)


def test_espeak_refuses_an_unknown_voice():
    with pytest.raises(SpeechFailed, match="no voice"):
        espeak.speak("Hi", Voice(BUILT_IN, "xx-nowhere"))


def test_every_premade_voice_speaks():
    for premade in espeak.EspeakSpeech().premade():
        assert espeak.speak("One two.", premade.voice).duration_s > 0.2, premade.id


# --- PocketSphinx ---------------------------------------------------------------------------


def _at_16k(speech) -> bytes:
    wav = engine.wav_bytes(speech.pcm, speech.sample_rate)
    return engine.decode_audio(wav, STT_SAMPLE_RATE, 60).pcm


@pytest.mark.slow
def test_sphinx_hears_words_within_the_audio():
    # The built-in model is weak on synthetic speech: words come back, not always these.
    speech = espeak.speak("Hello world. This is a test.", Voice(BUILT_IN, "en-us", rate=150))
    transcript = sphinx.recognize(_at_16k(speech))
    assert transcript.text.split() and transcript.segments
    assert transcript.text == " ".join(segment.text for segment in transcript.segments)
    ends = [segment.end_s for segment in transcript.segments]
    assert 0 < transcript.segments[0].start_s < ends[0] <= ends[-1] <= speech.duration_s + 0.05
    # Two sentences with a pause between them are two segments.
    assert len(transcript.segments) >= 2


def test_sphinx_hears_nothing_in_silence():
    assert sphinx.recognize(bytes(STT_SAMPLE_RATE)) == Transcript("", [])
    quiet_hum = (np.sin(np.arange(STT_SAMPLE_RATE) / 10) * 20).astype("<i2").tobytes()
    assert sphinx.recognize(quiet_hum).text == ""


@pytest.mark.slow
def test_the_sphinx_listener_runs_in_a_worker_process():
    async def scenario():
        listener = sphinx.SphinxListener()
        try:
            return await listener.transcribe(pcm)
        finally:
            listener.close()

    pcm = _at_16k(espeak.speak("Good morning to you.", ALEX))
    heard, here = asyncio.run(scenario()), sphinx.recognize(pcm)
    assert heard.text == here.text
    # Word boundaries may move by one 10 ms feature frame between processes.
    assert [s.text for s in heard.segments] == [s.text for s in here.segments]
    for a, b in zip(heard.segments, here.segments, strict=True):
        assert abs(a.start_s - b.start_s) <= 0.011 and abs(a.end_s - b.end_s) <= 0.011


# --- the OpenAI-compatible backends -----------------------------------------------------------


@pytest.fixture
def fake():
    server = FakeSpeech().start()
    yield server
    server.stop()


async def _with_client(work):
    import httpx

    async with httpx.AsyncClient() as client:
        return await work(client)


def test_backend_speech_is_asked_for_wav_and_timed_to_its_audio(fake):
    async def work(client):
        backend = BackendSpeech(client, fake.url(), "sk-tts", "kokoro", ("af_bella", "am_adam"))
        assert [p.id for p in backend.premade()] == ["tts-af_bella", "tts-am_adam"]
        return await backend.synthesize(SENTENCE, backend.premade()[1].voice)

    speech = asyncio.run(_with_client(work))
    (request,) = fake.requests
    assert request.path == "/v1/audio/speech"
    assert request.headers["authorization"] == "Bearer sk-tts"
    assert request.fields == {
        "model": "kokoro", "input": SENTENCE, "voice": "am_adam", "response_format": "wav"
    }  # fmt: skip
    assert speech.sample_rate == TONE_RATE
    assert speech.duration_s == pytest.approx(len(SENTENCE) * MS_PER_CHARACTER / 1000, abs=0.01)
    # The built-in timing, stretched to the backend's audio: the mouth closes as it ends.
    closes_ms, rest = speech.visemes[-1]
    assert rest == "sil" and speech.duration_s * 1000 - 400 < closes_ms <= speech.duration_s * 1000
    assert len({name for _, name in speech.visemes}) >= 8


def test_backend_transcription_sends_the_audio_as_wav(fake):
    pcm = bytes(STT_SAMPLE_RATE * 2 * 3)  # three seconds of 16-bit samples

    async def work(client):
        return await BackendListener(client, fake.url(), None, "whisper-x").transcribe(pcm)

    transcript = asyncio.run(_with_client(work))
    (request,) = fake.requests
    assert request.path == "/v1/audio/transcriptions" and "authorization" not in request.headers
    assert request.fields["model"] == "whisper-x"
    assert request.fields["response_format"] == "verbose_json"
    assert request.fields["file"][:4] == b"RIFF"
    assert transcript.text == "heard you"
    timed = [(s.start_s, s.end_s, s.text) for s in transcript.segments]
    assert timed == [(0.0, 3.0, "heard 3.00 s")]


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (500, None, "answered HTTP 500"),
        (200, b"not audio at all", "audio cannot be used"),
    ],
)
def test_backend_speech_failures_are_clear(fake, status, body, says):
    fake.status, fake.body = status, body

    async def work(client):
        return await BackendSpeech(client, fake.url(), None, "m", ("v",)).synthesize(
            "Hi.", Voice(BACKEND, "v")
        )

    with pytest.raises(SpeechFailed, match=says):
        asyncio.run(_with_client(work))


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (401, None, "answered HTTP 401"),
        (200, b'{"segments": []}', "not a transcription"),
        (200, b"<html>", "not a transcription"),
    ],
)
def test_backend_transcription_failures_are_clear(fake, status, body, says):
    fake.status, fake.body = status, body

    async def work(client):
        return await BackendListener(client, fake.url(), None, "m").transcribe(bytes(3200))

    with pytest.raises(SpeechFailed, match=says):
        asyncio.run(_with_client(work))


def test_an_unreachable_backend_is_clear(free_port):
    async def work(client):
        url = f"http://127.0.0.1:{free_port()}/v1"
        return await BackendListener(client, url, None, "m").transcribe(bytes(3200))

    with pytest.raises(SpeechFailed, match="cannot be reached"):
        asyncio.run(_with_client(work))
