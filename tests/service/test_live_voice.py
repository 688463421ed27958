"""Voice on the conversation sockets (SPEC 14): replies spoken sentence by sentence with their
visemes when the socket asks for speech, and the visitor's voice heard and answered."""

from __future__ import annotations

import json

import pytest

import engine
from service.domain import visemes
from service.domain.speech import BUILT_IN, STT_SAMPLE_RATE, SpeechFailed, Voice
from service.generators import espeak


@pytest.fixture
def route(api, alice) -> dict:
    agent = api.agent(alice, greeting="Hello there! Ask me anything.", voice_id="espeak-en-us-f3")
    return api.route(alice, agent["agent_id"])


def frames_until(ws, *types: str) -> list[dict | bytes]:
    """Frames (JSON as dicts, binary as bytes) up to and including the first of `types`."""
    seen: list[dict | bytes] = []
    while True:
        message = ws.receive()
        if message.get("bytes") is not None:
            seen.append(message["bytes"])
            continue
        frame = json.loads(message["text"])
        seen.append(frame)
        if frame["type"] in types:
            return seen


def spoken(frames: list) -> list[tuple[dict, bytes]]:
    """The (speech frame, PCM) pairs among `frames`: each speech frame is followed by its PCM."""
    pairs = []
    for index, frame in enumerate(frames):
        if isinstance(frame, dict) and frame["type"] == "speech":
            pcm = frames[index + 1]
            assert isinstance(pcm, bytes)
            pairs.append((frame, pcm))
    return pairs


def _check_sentence(frame: dict, pcm: bytes) -> None:
    assert frame["sample_rate"] == 22_050
    duration_ms = len(pcm) / 2 / frame["sample_rate"] * 1000
    cues = frame["visemes"]
    assert cues[0][0] == 0 and all(name in visemes.VISEMES for _, name in cues)
    assert cues[-1][1] == "sil" and duration_ms - 300 < cues[-1][0] <= duration_ms


def test_the_greeting_and_replies_are_spoken_sentence_by_sentence(api, route):
    with api.client.websocket_connect(f"/r/{route['id']}/ws?speech=1") as ws:
        greeting = frames_until(ws, "message")
        assert greeting[-1]["text"] == "Hello there! Ask me anything."
        said = [*frames_until(ws, "speech"), ws.receive_bytes()]
        said += [*frames_until(ws, "speech"), ws.receive_bytes()]
        (first, first_pcm), (second, second_pcm) = spoken(said)
        message_id = greeting[-1]["id"]
        assert (first["message_id"], first["seq"], second["seq"]) == (message_id, 1, 2)
        _check_sentence(first, first_pcm)
        _check_sentence(second, second_pcm)

        ws.send_json({"type": "message", "text": "I like tea. Do you?"})
        reply = frames_until(ws, "message")
        # The first sentence is spoken before the reply has finished streaming.
        kinds = [f["type"] if isinstance(f, dict) else "pcm" for f in reply]
        assert kinds.index("speech") < kinds.index("message")
        reply += [*frames_until(ws, "speech"), ws.receive_bytes()]
        sentences = spoken(reply)
        assert [f["seq"] for f, _ in sentences] == [1, 2]
        assert {f["message_id"] for f, _ in sentences} == {reply[kinds.index("message")]["id"]}


def test_without_speech_the_socket_carries_text_only(api, route):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        frames_until(ws, "message")
        ws.send_json({"type": "ping"})
        assert ws.receive_json() == {"type": "pong"}  # no speech frame came between


def _voice_of(text: str) -> bytes:
    speech = espeak.speak(text, Voice(BUILT_IN, "en-us", rate=150))
    wav = engine.wav_bytes(speech.pcm, speech.sample_rate)
    return engine.decode_audio(wav, STT_SAMPLE_RATE, 60).pcm


@pytest.mark.slow
def test_the_visitors_voice_is_heard_and_answered(api, route):
    pcm = _voice_of("Hello world. This is a test.")
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        frames_until(ws, "message")
        ws.send_json({"type": "listen", "sample_rate": 16000})
        for start in range(0, len(pcm), 6400):  # 200 ms chunks, as the page sends them
            ws.send_bytes(pcm[start : start + 6400])
        ws.send_json({"type": "listen_end"})
        transcript = ws.receive_json()
        assert transcript["type"] == "transcript" and transcript["text"].split()
        reply = frames_until(ws, "message")[-1]
        assert reply["text"].endswith(transcript["text"])  # the offline responder echoes it


@pytest.mark.parametrize(
    ("frames", "says"),
    [
        ([b"\x00\x01"], 'Send {"type": "listen"} before the voice.'),
        ([{"type": "listen_end"}], 'Send {"type": "listen"} and the voice first.'),
        ([{"type": "listen", "sample_rate": 8000}], "sample_rate: must be 16000"),
        (
            [{"type": "listen"}] + [bytes(64_000)] * 16,  # 32 s
            "An utterance lasts at most 30 seconds.",
        ),
    ],
)
def test_voice_out_of_order_or_too_long_is_refused(api, route, frames, says):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        frames_until(ws, "message")
        for frame in frames:
            ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_json(frame)
        error = frames_until(ws, "error")[-1]
        assert error["message"].startswith(says)
        ws.send_json({"type": "listen_end"})  # whatever was gathered is dropped
        assert frames_until(ws, "error")[-1]["message"].startswith("Send")


def test_silence_is_heard_as_nothing(api, route):
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        frames_until(ws, "message")
        ws.send_json({"type": "listen"})
        ws.send_bytes(bytes(16_000))
        ws.send_json({"type": "listen_end"})
        assert ws.receive_json() == {"type": "transcript", "text": ""}
        assert ws.receive_json()["message"] == "Nothing was heard; please try again."


def test_when_speech_fails_the_reply_goes_on_as_text(api, route, monkeypatch):
    async def broken(text, voice):
        raise SpeechFailed("The speech backend answered HTTP 500.")

    monkeypatch.setattr(api.ctx.speech, "synthesize", broken)
    with api.client.websocket_connect(f"/r/{route['id']}/ws?speech=1") as ws:
        assert frames_until(ws, "message")[-1]["text"] == "Hello there! Ask me anything."
        ws.send_json({"type": "message", "text": "One. Two."})
        reply = frames_until(ws, "message")
        assert reply[-1]["text"].endswith("One. Two.")
        assert not spoken(reply)
        ws.send_json({"type": "ping"})
        assert ws.receive_json() == {"type": "pong"}
