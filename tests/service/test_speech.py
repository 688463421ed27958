"""The speech endpoints: POST /v1/speech/tts and /v1/speech/stt, their limits and errors, the
kept `file_url` audio, and their usage."""

from __future__ import annotations

import base64
import io

import av
import numpy as np
import pytest

import engine
from service.domain import speaking
from service.domain.speech import BUILT_IN, Voice
from service.generators import espeak

TTS, STT = "/v1/speech/tts", "/v1/speech/stt"


def tts(api, auth, **body):
    body = {"voice_profile_id": "espeak-en-us", "return_type": "b64_audio_str"} | body
    return api.post(TTS, auth, json=body)


def _local(url: str) -> str:
    return url.removeprefix("http://testserver.local")


def test_tts_answers_a_wav_as_long_as_it_says(api, alice):
    response = tts(api, alice, text="Hello there. How are you today?")
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["id"].startswith("sp_") and data["voice_profile_id"] == "espeak-en-us"
    assert "file_url" not in data
    wav = base64.b64decode(data["b64_audio_str"])
    assert wav[:4] == b"RIFF"
    decoded = engine.decode_audio(wav, None, 60)
    assert decoded.sample_rate == 22_050
    assert decoded.duration_s == pytest.approx(data["output_duration"], abs=0.001)
    assert 1.0 < data["output_duration"] < 5.0


def test_the_pause_between_sentences_is_the_fragment_interval(api, alice):
    def length(interval: float) -> float:
        body = {"text": "One. Two. Three.", "opts": {"fragment_interval": interval}}
        return tts(api, alice, **body).json()["data"]["output_duration"]

    # Three sentences, two pauses; eSpeak's own length varies by a few ms a call.
    assert length(1.0) - length(0.0) == pytest.approx(2.0, abs=0.02)


def test_sentences_are_cut_at_their_ends():
    said = "Hi there! Is it 3.5 today? Yes. 你好。再见！ok"
    assert speaking.sentences(said) == [
        "Hi there!",
        "Is it 3.5 today?",
        "Yes.",
        "你好。",
        "再见！",
        "ok",
    ]


def test_chinese_text_takes_the_dialect_asked_for(api, alice):
    def duration(dialect: str) -> float:
        body = {"text": "你好，今天天气很好。", "chinese_language": dialect}
        return tts(api, alice, **body).json()["data"]["output_duration"]

    # Mandarin and Cantonese read the same characters differently (and so last differently).
    assert abs(duration("mandarin") - duration("yue")) > 0.05


def test_a_file_url_answer_is_a_signed_wav(api, alice):
    data = tts(api, alice, text="Keep this.", return_type="file_url").json()["data"]
    assert "b64_audio_str" not in data
    response = api.get(_local(data["file_url"]))
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    assert engine.decode_audio(response.content, None, 60).duration_s == pytest.approx(
        data["output_duration"], abs=0.001
    )
    assert api.get(_local(data["file_url"]).replace("signature=", "signature=A")).status_code == 403
    api.clock.advance(3601)
    assert api.get(_local(data["file_url"])).json()["error"]["code"] == "URL_EXPIRED"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "x" * 10_001}, "text"),
        ({"text": "Hi", "return_type": "mp3"}, "return_type"),
        ({"text": "Hi", "voice_profile_id": "nope"}, "voice_profile_id"),
        ({"text": "Hi", "opts": {"fragment_interval": 2}}, "opts.fragment_interval"),
        ({"text": "Hi", "chinese_language": "wu"}, "chinese_language"),
        ({"text": "Hi", "extra": 1}, "extra"),
        ({"text": "   "}, "text"),
    ],
)
def test_tts_bodies_are_checked(api, alice, body, field):
    response = tts(api, alice, **body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == field


def _mp3(pcm: bytes, rate: int) -> bytes:
    """The speech as MP3: STT takes any format PyAV decodes."""
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=rate)
        stream.layout = "mono"
        samples = np.frombuffer(pcm, "<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


@pytest.mark.slow
def test_stt_hears_words_and_times_them(api, alice):
    speech = espeak.speak("Hello world. This is a test.", Voice(BUILT_IN, "en-us", rate=150))
    audio = base64.b64encode(_mp3(speech.pcm, speech.sample_rate)).decode()
    response = api.post(STT, alice, json={"audio": audio})
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["id"].startswith("sp_")
    assert data["input_duration"] == pytest.approx(speech.duration_s, abs=0.05)
    assert data["text"].split() and data["transcription"]
    for item in data["transcription"]:
        assert set(item) == {"start", "end", "text"}
        assert 0 <= item["start"] < item["end"] <= data["input_duration"] + 0.05
    totals = api.get("/v1/usage", alice).json()["data"]["totals"]
    assert totals["stt_seconds"] == data["input_duration"]


@pytest.mark.parametrize(
    ("audio", "status", "code"),
    [
        ("not base64!", 422, "VALIDATION_ERROR"),
        (base64.b64encode(b"this is not audio" * 10).decode(), 422, "INVALID_AUDIO"),
    ],
)
def test_stt_refuses_what_is_not_audio(api, alice, audio, status, code):
    response = api.post(STT, alice, json={"audio": audio})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code


def test_stt_limits_the_audio(api, alice, monkeypatch):
    monkeypatch.setattr(speaking, "MAX_STT_S", 1.0)
    wav = engine.wav_bytes(bytes(2 * 22_050 * 2), 22_050)  # two seconds
    response = api.post(STT, alice, json={"audio": base64.b64encode(wav).decode()})
    assert response.status_code == 422
    assert "longer than 1 seconds" in response.json()["error"]["message"]
    monkeypatch.setattr(speaking, "MAX_STT_BYTES", 100)
    response = api.post(STT, alice, json={"audio": base64.b64encode(wav).decode()})
    assert response.json()["error"]["details"][0]["field"] == "audio"


def test_tts_usage_is_counted_in_seconds(api, alice):
    first = tts(api, alice, text="One.").json()["data"]["output_duration"]
    second = tts(api, alice, text="Two more words.").json()["data"]["output_duration"]
    data = api.get("/v1/usage", alice).json()["data"]
    assert [item["kind"] for item in data["items"]] == ["tts", "tts"]
    assert data["totals"]["tts_seconds"] == pytest.approx(first + second, abs=0.002)
