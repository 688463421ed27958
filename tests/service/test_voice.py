"""Voice profiles (premade and owned), the clone task on samples the TTS made at two pitches,
and the voice ids of agents and sessions."""

from __future__ import annotations

import asyncio
from functools import cache

import numpy as np
import pytest

import engine
from service.domain import task_runs as runs
from service.domain import voices
from service.domain.kinds import task_kinds
from service.domain.models import Agent
from service.domain.speech import BUILT_IN, STT_SAMPLE_RATE, Voice
from service.generators import espeak
from service.generators.pitch import pitch_stats

SAYINGS = (
    "The weather is nice today.",
    "I would like a cup of tea, please.",
    "Where is the nearest station?",
    "My favourite colour is blue.",
    "We met at the park on Sunday.",
    "Please call me tomorrow morning.",
)
LOW = Voice(BUILT_IN, "en-us", pitch=15, rate=150)
HIGH = Voice(BUILT_IN, "en-us+f3", pitch=75, rate=220)


@cache
def samples_of(voice: Voice) -> tuple[tuple[str, bytes], ...]:
    """(file name, WAV) of each saying in `voice`."""
    return tuple(
        (f"clip{index}.wav", _wav(espeak.speak(text, voice))) for index, text in enumerate(SAYINGS)
    )


def _wav(speech) -> bytes:
    return engine.wav_bytes(speech.pcm, speech.sample_rate)


def annotations(samples) -> bytes:
    lines = (f"{name}|{text}" for (name, _), text in zip(samples, SAYINGS, strict=False))
    return "\n".join(lines).encode()


def clone(api, auth, samples, annotation: bytes | None = None, **fields):
    files = [("audio_samples", (name, wav, "audio/wav")) for name, wav in samples]
    if annotation is None:
        annotation = annotations(samples)
    files.append(("annotation_list", ("list.txt", annotation, "text/plain")))
    return api.post("/v1/voice/clone", auth, files=files, data=fields)


def run_next(api) -> None:
    """Run the oldest waiting task to its end in this process, as a task worker would."""

    async def run() -> None:
        ctx = api.ctx
        task = await runs.claim(ctx, "wrk_test")
        kind = task_kinds()[task.kind]
        try:
            output = await asyncio.to_thread(kind.run, runs.Job(task, ctx.settings, ctx.files))
        except runs.TaskFailed as exc:
            assert await runs.fail(ctx, task, kind, exc.error)
        else:
            assert await runs.complete(ctx, task, kind, output)

    with api.client.portal() as portal:
        portal.call(run)


def median_hz(wav: bytes) -> float:
    pcm = engine.decode_audio(wav, STT_SAMPLE_RATE, 60).pcm
    return pitch_stats(np.frombuffer(pcm, "<i2"), STT_SAMPLE_RATE).median_hz


def test_premade_profiles_are_a_bare_array_with_playable_samples(api, alice):
    response = api.get("/v1/voice/premade_profiles", alice)
    assert response.status_code == 200
    profiles = response.json()["data"]
    assert isinstance(profiles, list) and len(profiles) == len(espeak.EspeakSpeech().premade())
    first = profiles[0]
    assert first["id"] == "espeak-en-us" and first["is_premade"] is True
    assert first["languages"] == ["en"] and first["status"] == "READY" and "user_id" not in first
    assert {"espeak-cmn", "espeak-yue"} <= {p["id"] for p in profiles}
    # The sample clip needs no key, and is speech of a second or more.
    clip = api.get(first["sample_clip"].removeprefix("http://testserver.local"))
    assert clip.status_code == 200 and clip.headers["content-type"] == "audio/wav"
    assert engine.decode_audio(clip.content, None, 60).duration_s > 1.0
    tampered = first["sample_clip"].replace("signature=", "signature=x")
    assert api.get(tampered.removeprefix("http://testserver.local")).status_code == 403


def test_a_premade_profile_is_read_by_id_and_cannot_be_deleted(api, alice):
    assert api.get("/v1/voice/profiles/espeak-de", alice).json()["data"]["name"] == "Lukas"
    response = api.call("DELETE", "/v1/voice/profiles/espeak-de", alice)
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert api.get("/v1/voice/profiles/vp_nothing", alice).status_code == 404
    assert api.get("/v1/voice/profiles", alice).json() == {"data": []}


def test_voice_ids_of_agents_and_sessions_must_name_a_usable_profile(api, alice):
    response = api.post("/v1/agents", alice, json={"name": "A", "voice_id": "v1"})
    assert response.status_code == 422
    (detail,) = response.json()["error"]["details"]
    assert detail["field"] == "voice_id" and "/v1/voice/premade_profiles" in detail["message"]
    avatar_id = api.avatar(alice)["avatar_id"]
    body = {"avatar_id": avatar_id, "voice_profile_id": "v1", "llm_model": "m", "instruction": "Hi"}
    response = api.post("/v1/interactive/start_session", alice, json=body)
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "voice_profile_id"


def test_a_legacy_voice_id_speaks_with_the_default_voice(api):
    async def scenario():
        ctx = api.ctx
        agent = Agent("agt_old", "own_x", "Old", 0, 0, voice_id="an-old-voice")
        return await voices.voice_for(ctx, "own_x", agent.voice_id)

    with api.client.portal() as portal:
        assert portal.call(scenario) == espeak.EspeakSpeech().premade()[0].voice


@pytest.mark.slow
def test_clones_of_two_speakers_match_their_pitch(api, alice, bob):
    made = {}
    for name, source in (("Low", LOW), ("High", HIGH)):
        response = clone(api, alice, samples_of(source), name=f"{name} voice")
        assert response.status_code == 200, response.text
        task = response.json()["data"]
        assert task["status"] == "IN_QUEUE"
        run_next(api)
        status = api.get(f"/v1/voice/clone/{task['task_id']}/status", alice).json()["data"]
        assert status["status"] == "COMPLETED", status
        assert status["meta_data"]["f0_median_hz"] > 0
        made[name] = api.get(f"/v1/voice/profiles/{status['profile_id']}", alice).json()["data"]
        api.clock.advance(1)
    listed = api.get("/v1/voice/profiles", alice).json()["data"]
    assert [p["name"] for p in listed] == ["High voice", "Low voice"]  # newest first
    assert all(p["is_premade"] is False and p["user_id"] for p in listed)
    # Measured by the same estimator: the clips differ, and each profile says the sayings
    # near its speaker's pitch.
    clips = {name: median_hz(_clip(api, profile)) for name, profile in made.items()}
    assert clips["High"] > 2 * clips["Low"]
    text = " ".join(SAYINGS)
    for name, source in (("Low", LOW), ("High", HIGH)):
        voice = _voice_of(api, made[name]["id"])
        heard, spoken = (median_hz(_wav(espeak.speak(text, v))) for v in (voice, source))
        assert abs(12 * np.log2(heard / spoken)) < 2.0, (name, heard, spoken)
    # Another owner sees none of them.
    assert api.get(f"/v1/voice/profiles/{made['Low']['id']}", bob).status_code == 404


def _voice_of(api, profile_id: str) -> Voice:
    async def read():
        return (await voices.get_profile(api.ctx, owner_id, profile_id)).voice

    with api.client.portal() as portal:
        owner_id = portal.call(api.ctx.store.get_voice_profile, profile_id).owner_id
        return portal.call(read)


def _clip(api, profile) -> bytes:
    response = api.get(profile["sample_clip"].removeprefix("http://testserver.local"))
    assert response.status_code == 200
    return response.content


@pytest.mark.slow
def test_deleting_a_profile_moves_its_agents_to_the_default_voice(api, alice):
    task = clone(api, alice, samples_of(LOW)).json()["data"]
    run_next(api)
    status = api.get(f"/v1/voice/clone/{task['task_id']}/status", alice).json()["data"]
    profile_id = status["profile_id"]
    agent = api.agent(alice, voice_id=profile_id)
    assert api.call("DELETE", f"/v1/voice/profiles/{profile_id}", alice).json() == {"data": {}}
    assert api.get(f"/v1/voice/profiles/{profile_id}", alice).status_code == 404
    moved = api.get(f"/v1/agents/{agent['agent_id']}", alice).json()["data"]
    assert moved["voice_id"] == "espeak-en-us"


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        (lambda s: s[:5], "audio_samples", "must be 6 to 20 files; 5 given"),
        (lambda s: (*s[:6], (s[0][0], b"x")), "audio_samples", "its own file name"),
    ],
)
def test_clone_forms_are_checked(api, alice, change, field, says):
    response = clone(api, alice, change(samples_of(LOW)))
    assert response.status_code == 422, response.text
    (detail,) = response.json()["error"]["details"]
    assert detail["field"] == field and says in detail["message"]


@pytest.mark.parametrize(
    ("annotation", "says"),
    [
        (b"clip0.wav|Hello", "has no line for clip1.wav"),
        (b"just text", "line 1 is not `file name|text`"),
        (b"\xff\xfe", "must be UTF-8 text"),
    ],
)
def test_annotation_lists_are_checked(api, alice, annotation, says):
    response = clone(api, alice, samples_of(LOW), annotation)
    assert response.status_code == 422
    assert says in response.json()["error"]["details"][0]["message"]
    assert not any((api.ctx.settings.data_dir / "uploads").rglob("*.sample-*"))


def test_a_name_out_of_range_is_refused(api, alice):
    response = clone(api, alice, samples_of(LOW), name="ab")
    assert response.json()["error"]["details"][0]["field"] == "name"


def test_a_sample_that_is_not_audio_fails_the_task_and_is_removed(api, alice):
    samples = (("noise.wav", b"RIFF not really"), *samples_of(LOW)[1:])
    names = "\n".join(f"{name}|words" for name, _ in samples).encode()
    task = clone(api, alice, samples, names).json()["data"]
    run_next(api)
    status = api.get(f"/v1/voice/clone/{task['task_id']}/status", alice).json()["data"]
    assert status["status"] == "FAILED" and status["error_code"] == "INVALID_AUDIO"
    assert status["error"].startswith("noise.wav: ")
    assert not any((api.ctx.settings.data_dir / "uploads").rglob("*.sample-*"))
