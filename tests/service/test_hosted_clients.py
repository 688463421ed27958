"""The hosted API's own clients against a real `serve`: every answer of the flow they drive
decodes into the hosted response types (tests/service/hosted_types.py), with the checks the
hosted CLI makes on what it reads."""

from __future__ import annotations

import base64
import io
import json

import httpx
import pytest
from PIL import Image
from skimage import data as skimage_data

import engine
from service.domain.speech import BUILT_IN, Voice
from service.generators import espeak
from tests.service.fake_images import FakeImages
from tests.service.hosted_types import (
    AgentApiResponseBody,
    AgentRouteApiResponseBody,
    AsyncBuildApiResponseBody,
    AsyncFinetuningApiResponseBody,
    AsyncTaskApiResponseBody,
    DataStruct,
    DeleteVoiceProfileApiResponseBody,
    FinetuningStatusApiResponseBody,
    GenerateAvatarStatusApiResponseBody,
    GenerateImageApiResponseBody,
    GenerateImageStatusApiResponseBody,
    GetAvatarApiResponseBody,
    GetPremadeProfilesApiResponseBody,
    GetSessionProfileApiResponseBody,
    GetUserAvatarListApiResponseBody,
    GetVoiceProfileApiResponseBody,
    GetVoiceProfilesApiResponseBody,
    ListSessionsApiResponseBody,
    RouteListApiResponseBody,
    StartSessionApiResponseBody,
    StopSessionsApiResponseBody,
    STTApiResponseBody,
    TTSApiResponseBody,
    UpscaleStatusApiResponseBody,
    check_created_route,
    check_route,
    is_unset,
    read,
)

FINAL = {"COMPLETED", "FAILED", "CANCELED", "TIMED_OUT"}


@pytest.fixture
def client(start_serve):
    images = FakeImages().start()  # the images backend image generation draws through
    server = start_serve(AVATAR_X264_PRESET="ultrafast", AVATAR_IMAGE_BASE_URL=images.url())
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=30) as client:
        yield client
    images.stop()


def _png_served(client: httpx.Client, url: str) -> Image.Image:
    response = client.get(url, headers={"Authorization": ""})  # public: no key needed
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


def generate_avatar(client: httpx.Client, poll) -> str:
    """An avatar made by the generation task, read as the CLI's `avatar generate` reads it."""
    body = {"prompt": "a cheerful sailor with red hair", "seed": 7}
    submitted = read(client.post("/v1/avatar/async_generate", json=body), AsyncTaskApiResponseBody)
    assert submitted.data.status == "IN_QUEUE"
    path = f"/v1/avatar/async_generate/{submitted.data.task_id}/status"
    raw = poll(lambda: (d := client.get(path).json()["data"])["status"] in FINAL and d)
    status = read(client.get(path), GenerateAvatarStatusApiResponseBody).data
    assert status.task_id == submitted.data.task_id and status.status == "COMPLETED"
    assert "error" not in raw  # the CLI reads a present `error` as a failure
    assert Image.open(io.BytesIO(base64.b64decode(status.image))).format == "PNG"
    return raw["avatar_id"]


def upscale_clip(client: httpx.Client, poll, clip: bytes) -> None:
    """Submit a small clip, follow its status_url to the end, download through file_url."""
    files = {"file": ("clip.mp4", clip, "video/mp4")}
    submitted = client.post("/v1/video/upscale", params={"resolution": "1080p"}, files=files)
    task = read(submitted, AsyncTaskApiResponseBody).data
    status_url = submitted.json()["data"]["status_url"]
    raw = poll(lambda: (d := client.get(status_url).json()["data"])["status"] in FINAL and d)
    status = read(client.get(status_url), UpscaleStatusApiResponseBody).data
    assert (status.task_id, status.status) == (task.task_id, "COMPLETED")
    assert "error" not in raw and status.completed_at is not None
    output = status.result.output
    assert output.readable_until > status.completed_at
    video = httpx.get(output.file_url, timeout=30)  # a signed link: no key
    assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
    facts = raw["result"]["output"]
    assert len(video.content) == facts["size_bytes"]
    assert (facts["width"], facts["height"]) == (640, 360)  # 4x at most


def check_sessions(client: httpx.Client, avatar_id: str) -> None:
    """Start, list, profile and stop, with the body the CLI's `interactive start` sends."""
    tools = json.dumps([{"type": "function", "name": "search"}])  # a string, as the SDK types it
    body = {
        "avatar_id": avatar_id, "model": "metis-2.5", "llm_model": "gemini-2.0-flash",
        "voice_profile_id": "espeak-en-us", "instruction": "Be brief.", "idle_timeout": 30,
        "tools": tools, "use_beta": True,
    }  # fmt: skip
    started = read(
        client.post("/v1/interactive/start_session", json=body), StartSessionApiResponseBody
    )
    session = started.data.session
    assert session.metis_model == "metis-2.5" and session.idle_timeout == 30
    assert session.avatar.id == avatar_id and session.state in ("starting", "ready")
    sid = session.session_id
    listed = read(client.get("/v1/interactive/list"), ListSessionsApiResponseBody).data
    assert [s.session_id for s in listed] == [sid]
    path = f"/v1/interactive/session/{sid}/profile"
    profile = read(client.get(path), GetSessionProfileApiResponseBody).data
    assert (profile.session_id, profile.session_token) == (sid, started.data.session_token)
    assert profile.avatar.id == avatar_id and profile.avatar.name == session.avatar.name
    assert _png_served(client, profile.avatar.image).format == "PNG"
    stop = client.post("/v1/interactive/stop_sessions", json={"session_ids": [sid]})
    assert read(stop, StopSessionsApiResponseBody).data.stopped_sessions == [sid]
    assert read(client.get("/v1/interactive/list"), ListSessionsApiResponseBody).data == []


def check_avatars(client: httpx.Client, avatar_ids: list[str]) -> None:
    """List, get and delete on the hosted paths, as the CLI's `avatar` commands do."""
    listed = read(client.get("/v1/avatar/list"), GetUserAvatarListApiResponseBody).data
    assert [a.id for a in listed] == avatar_ids  # newest first
    for avatar in listed:
        assert avatar.status == "READY" and avatar.supported_interactive_models == ["metis-2.5"]
        assert read(client.get(f"/v1/avatar/{avatar.id}"), GetAvatarApiResponseBody).data == avatar
        [theme] = avatar.themes
        assert theme.name == "Default" and _png_served(client, theme.key_image).format == "PNG"
    for avatar_id in avatar_ids:
        deleted = client.delete(f"/v1/avatar/{avatar_id}")
        assert (deleted.status_code, deleted.content) == (204, b"")
        assert client.get(f"/v1/avatar/{avatar_id}").status_code == 404
    assert read(client.get("/v1/avatar/list"), GetUserAvatarListApiResponseBody).data == []


def create_agent(client: httpx.Client, avatar_id: str) -> str:
    """The body the CLI's `agent create` sends for a managed agent."""
    body = {
        "name": "Agent One", "avatar_id": avatar_id, "voice_profile_id": "espeak-en-us",
        "runtime_kind": "managed_agent", "description": "Helpful agent", "model": "metis-2.5",
        "instruction": "Be helpful", "tools": [{"type": "function", "name": "search"}],
    }  # fmt: skip
    agent = read(client.post("/v1/agents", json=body), AgentApiResponseBody, status=201).data
    assert (agent.name, agent.avatar_id, agent.voice_profile_id) == (
        "Agent One",
        avatar_id,
        "espeak-en-us",
    )
    assert read(client.get(f"/v1/agents/{agent.id}"), AgentApiResponseBody).data == agent
    return agent.id


def check_routes(client: httpx.Client, agent_id: str) -> None:
    """Create, list, get, update and revoke, with the CLI's checks on each route read."""
    create = f"/v1/agents/{agent_id}/routes"
    permanent = read(client.post(create, json={}), AgentRouteApiResponseBody, 201).data
    check_created_route(permanent, agent_id, temporary=False)
    body = {"label": "Production website", "validity_seconds": 86400}
    temporary = read(client.post(create, json=body), AgentRouteApiResponseBody, 201).data
    check_created_route(temporary, agent_id, temporary=True)
    listed = read(client.get("/v1/agent-routes"), RouteListApiResponseBody).data.items
    assert [r.id for r in listed] == [temporary.id, permanent.id]
    for route in listed:
        check_route(route)
    path = f"/v1/agent-routes/{temporary.id}"
    assert read(client.get(path), AgentRouteApiResponseBody).data == temporary
    renamed = read(client.post(f"{path}/update", json={"label": "Shop"}), AgentRouteApiResponseBody)
    check_route(renamed.data)
    assert (renamed.data.label, renamed.data.route_version) == ("Shop", 2)
    revoked = read(client.post(f"{path}/revoke"), AgentRouteApiResponseBody).data
    check_route(revoked)
    assert revoked.id == temporary.id and revoked.status == "revoked" and revoked.revoked_at
    assert revoked.route_version == 3
    # The CLI's `agent delete`: its other route is revoked with it.
    assert client.delete(f"/v1/agents/{agent_id}").status_code == 200
    gone = read(client.get(f"/v1/agent-routes/{permanent.id}"), AgentRouteApiResponseBody).data
    check_route(gone)
    assert gone.status == "revoked" and gone.route_version == 2


def _clone_samples(texts: list[str]) -> list[tuple[str, tuple[str, bytes, str]]]:
    """Six samples the built-in TTS speaks, as the form's `audio_samples` parts."""
    parts = []
    for index, text in enumerate(texts):
        speech = espeak.speak(text, Voice(BUILT_IN, "en-us+f3", pitch=70))
        wav = engine.wav_bytes(speech.pcm, speech.sample_rate)
        parts.append(("audio_samples", (f"s{index}.wav", wav, "audio/wav")))
    return parts


def check_voice_and_speech(client: httpx.Client, poll) -> None:
    """Premade profiles, a clone, its profile, TTS with it (both return types), STT of that."""
    premade = read(client.get("/v1/voice/premade_profiles"), GetPremadeProfilesApiResponseBody)
    first = premade.data[0]
    assert first.is_premade and first.status == "READY" and is_unset(first.user_id)
    clip = httpx.get(first.sample_clip, timeout=30)  # a signed link: no key
    assert clip.status_code == 200 and clip.content[:4] == b"RIFF"
    texts = [f"This is sample number {n}, read aloud for the clone." for n in range(6)]
    files = _clone_samples(texts)
    listing = "\n".join(f"s{n}.wav|{text}" for n, text in enumerate(texts))
    files.append(("annotation_list", ("list.txt", listing.encode(), "text/plain")))
    submitted = client.post("/v1/voice/clone", files=files, data={"name": "Clone"})
    task = read(submitted, AsyncFinetuningApiResponseBody).data
    path = f"/v1/voice/clone/{task.task_id}/status"
    poll(lambda: client.get(path).json()["data"]["status"] in FINAL)
    status = read(client.get(path), FinetuningStatusApiResponseBody).data
    assert status.status == "COMPLETED" and is_unset(status.error) and status.meta_data
    profile = read(
        client.get(f"/v1/voice/profiles/{status.profile_id}"), GetVoiceProfileApiResponseBody
    )
    assert profile.data.is_premade is False and profile.data.name == "Clone"
    owned = read(client.get("/v1/voice/profiles"), GetVoiceProfilesApiResponseBody).data
    assert [p.id for p in owned] == [status.profile_id]
    body = {"text": "Hello from the clone.", "voice_profile_id": status.profile_id}
    inline = read(
        client.post("/v1/speech/tts", json=body | {"return_type": "b64_audio_str"}),
        TTSApiResponseBody,
    ).data
    wav = base64.b64decode(inline.b64_audio_str)
    kept = read(
        client.post("/v1/speech/tts", json=body | {"return_type": "file_url"}), TTSApiResponseBody
    ).data
    assert httpx.get(kept.file_url, timeout=30).content[:4] == b"RIFF"
    heard = read(
        client.post("/v1/speech/stt", json={"audio": base64.b64encode(wav).decode()}),
        STTApiResponseBody,
    ).data
    assert heard.input_duration == pytest.approx(inline.output_duration, abs=0.05)
    deleted = client.delete(f"/v1/voice/profiles/{status.profile_id}")
    assert read(deleted, DeleteVoiceProfileApiResponseBody).data == DataStruct()


def check_build(client: httpx.Client, poll) -> None:
    """An avatar built from a photo, read (as the CLI reads avatars) until READY."""
    out = io.BytesIO()
    Image.fromarray(skimage_data.astronaut()).save(out, format="JPEG")
    body = {"image": base64.b64encode(out.getvalue()).decode(), "name": "Astro"}
    built = read(client.post("/v1/avatar/async_build", json=body), AsyncBuildApiResponseBody)
    path = f"/v1/avatar/{built.data.avatar_id}"
    poll(lambda: client.get(path).json()["data"]["status"] in ("READY", "ERROR"), timeout=60)
    avatar = read(client.get(path), GetAvatarApiResponseBody).data
    assert avatar.status == "READY" and avatar.themes and avatar.name == "Astro"
    assert client.delete(path).status_code == 204


def check_images(client: httpx.Client, poll) -> None:
    """A picture drawn at once and one drawn by a task, each a base64 JPEG."""
    body = {"prompt": "a lantern", "aspect_ratio": "3:4"}
    drawn = read(client.post("/v1/image/generate", json=body), GenerateImageApiResponseBody)
    assert base64.b64decode(drawn.data.image)[:3] == b"\xff\xd8\xff"
    submitted = client.post("/v1/image/async_generate", json=body)
    task = read(submitted, AsyncTaskApiResponseBody).data
    path = f"/v1/image/async_generate/{task.task_id}/status"
    poll(lambda: client.get(path).json()["data"]["status"] in FINAL)
    status = read(client.get(path), GenerateImageStatusApiResponseBody).data
    assert status.status == "COMPLETED" and base64.b64decode(status.image)[:3] == b"\xff\xd8\xff"


def test_the_hosted_clients_read_every_answer(client, poll, png_bytes, mp4_bytes):
    files = {"image": ("face.png", png_bytes(64, 64), "image/png")}
    uploaded = client.post("/v1/avatars", files=files, data={"name": "Ada"})
    assert uploaded.status_code == 201
    uploaded_id = uploaded.json()["data"]["avatar_id"]
    generated_id = generate_avatar(client, poll)
    check_sessions(client, generated_id)
    check_routes(client, create_agent(client, uploaded_id))
    check_avatars(client, [generated_id, uploaded_id])
    upscale_clip(client, poll, mp4_bytes(160, 90, frames=6))
    check_voice_and_speech(client, poll)
    check_images(client, poll)
    check_build(client, poll)
