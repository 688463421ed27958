"""A client generated from the served OpenAPI document drives the API.

A real `serve` answers its document; it must validate (openapi-spec-validator) and generate
(openapi-python-client) with no warning and a function per operation. Then `FLOW` runs through
that generated client only: every answer must have a documented status and parse into the
generated model the step names, and every operation but HEAD's and those of `NOT_DRIVEN` must
be driven. An issue that adds endpoints adds its step to `FLOW`."""

from __future__ import annotations

import base64
import importlib
import io
import json
import pkgutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import av
import httpx
import pytest
import websockets.sync.client
from openapi_spec_validator import validate
from PIL import Image
from skimage import data as skimage_data

import engine
from tests.service.conftest import mp4_bytes, png_bytes
from tests.service.fake_images import FakeImages

PACKAGE = "avatar_client"
# The generator reads only JSON and application/octet-stream answers as they are: the two file
# downloads are told to be read as bytes (docs/api.md, "OpenAPI"). No post hooks: the generated
# code is imported, not kept.
GENERATOR_CONFIG = {
    "content_type_overrides": {
        "video/mp4": "application/octet-stream",
        "image/png": "application/octet-stream",
        "audio/wav": "application/octet-stream",
    },
    "post_hooks": [],
}
METHODS = ("get", "put", "post", "delete", "patch", "head")


@pytest.fixture(scope="module")
def server(start_serve_module):
    images = FakeImages().start()  # the images backend image generation draws through
    yield start_serve_module(AVATAR_X264_PRESET="ultrafast", AVATAR_IMAGE_BASE_URL=images.url())
    images.stop()


@pytest.fixture(scope="module")
def document(server) -> dict[str, Any]:
    response = httpx.get(f"{server.base}/schema/openapi.json", timeout=10)
    assert response.status_code == 200
    return response.json()


@dataclass(frozen=True)
class Generated:
    package: ModuleType
    output: str  # what the generator printed
    operations: dict[str, ModuleType]  # operation id -> its generated module

    @property
    def models(self) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.models")

    @property
    def types(self) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.types")


@pytest.fixture(scope="module")
def generated(document, tmp_path_factory) -> Iterator[Generated]:
    folder = tmp_path_factory.mktemp("generated")
    (folder / "openapi.json").write_text(json.dumps(document))
    (folder / "config.json").write_text(json.dumps(GENERATOR_CONFIG))
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--meta", "none"]
    command += ["--path", str(folder / "openapi.json"), "--config", str(folder / "config.json")]
    command += ["--output-path", str(folder / PACKAGE)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PACKAGE)
        api = importlib.import_module(f"{PACKAGE}.api")
        operations = {
            info.name.rpartition(".")[2]: importlib.import_module(info.name)
            for info in pkgutil.walk_packages(api.__path__, f"{PACKAGE}.api.")
            if not info.ispkg
        }
        yield Generated(package, run.stdout + run.stderr, operations)
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_the_document_validates(document):
    validate(document)


def test_the_generator_warns_of_nothing_and_makes_a_function_per_operation(generated, document):
    assert "warning" not in generated.output.lower(), generated.output
    operation_ids = {
        operation["operationId"]
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in METHODS
    }
    assert set(generated.operations) == operation_ids
    for module in generated.operations.values():
        assert callable(module.sync_detailed), module.__name__


# The flow

# Operations the flow does not drive, and why (every other one must be driven; HEAD answers
# carry no body, so one stands for them all).
NOT_DRIVEN = {
    "cancel_upscale": "a race with serve's task workers; test_upscale cancels through the API",
    "cancel_generation": "a race with serve's task workers; test_generation cancels",
    "cancel_clone": "a race with serve's task workers; test_voice cancels",
    "cancel_talking_avatar": "a race with serve's task workers; test_talking_video_tasks cancels",
    "cancel_avatar_motion": "a race with serve's task workers; test_talking_video_tasks cancels",
    "cancel_image_generation": "a race with serve's task workers; test_image_generation cancels",
}
HEAD_PREFIX = "head_"


@dataclass
class Flow:
    """The generated client, and what the steps made (for the steps after them)."""

    generated: Generated
    client: Any  # the generated AuthenticatedClient
    poll: Callable[..., Any]  # conftest's poll_until
    base: str  # the server's base URL (for the conversation socket)
    made: dict[str, Any] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)

    @property
    def models(self) -> ModuleType:
        return self.generated.models

    def call(self, operation: str, model: type | None, *args: Any, **kwargs: Any) -> Any:
        """Call the generated function of `operation`; its answer must be a success that
        parses into `model` (None: an answer without a body). Returns the parsed answer."""
        module = self.generated.operations[operation]
        response = module.sync_detailed(*args, client=self.client, **kwargs)
        self.called.add(operation)
        assert 200 <= response.status_code < 300, (operation, response.content[:500])
        if model is None:
            assert response.content == b"", operation
        else:
            assert isinstance(response.parsed, model), (operation, response.content[:500])
        return response.parsed

    def upload(self, payload: bytes, name: str, media_type: str) -> Any:
        return self.generated.types.File(io.BytesIO(payload), name, media_type)


def health(flow: Flow) -> None:
    assert flow.call("healthz", flow.models.HealthEnvelope).data.status == "ok"


def agents(flow: Flow) -> None:
    m = flow.models
    tool = m.CreateAgentAgentCreateToolsType1Item.from_dict({"type": "function", "name": "f"})
    body = m.CreateAgentAgentCreate(name="Ada", tools=[tool], greeting="Hi")
    agent = flow.call("create_agent", m.AgentEnvelope, body=body).data
    assert isinstance(agent.created_at, datetime)
    update = m.UpdateAgentAgentUpdate(greeting="Hello")
    assert flow.call("update_agent", m.AgentEnvelope, agent.agent_id, body=update).data.greeting
    flow.call("get_agent", m.AgentEnvelope, agent.agent_id)
    flow.call("head_get_agent", None, agent.agent_id)
    assert flow.call("list_agents", m.AgentPageEnvelope).data.items
    flow.made["agent_id"] = agent.agent_id


def routes(flow: Flow) -> None:
    m, agent_id = flow.models, flow.made["agent_id"]
    body = m.CreateRouteRouteCreate(label="lobby", validity_seconds=3600)
    route = flow.call("create_route", m.RouteEnvelope, agent_id, body=body).data
    assert isinstance(route.expires_at, datetime)
    page = flow.call("list_agent_routes", m.RoutePageEnvelope, agent_id).data
    assert [r.id for r in page.items] == [route.id]
    active = m.ListRoutesStatus("active")
    assert flow.call("list_routes", m.RoutePageEnvelope, status=active).data.items
    flow.call("get_route", m.RouteEnvelope, route.id)
    update = m.UpdateRouteRouteUpdate(label="hall")
    assert flow.call("update_route", m.RouteEnvelope, route.id, body=update).data.label == "hall"
    flow.made["route_id"] = route.id


def conversations(flow: Flow) -> None:
    """A visitor says one thing through the route's page socket; the conversation is kept."""
    m, route_id = flow.models, flow.made["route_id"]
    socket_url = flow.base.replace("http", "ws", 1) + f"/r/{route_id}/ws"
    with websockets.sync.client.connect(socket_url, open_timeout=10) as socket:
        socket.send(json.dumps({"type": "message", "text": "Hello there"}))
        socket.send(json.dumps({"type": "ping"}))  # answered once the message was taken
        while json.loads(socket.recv(timeout=10)) != {"type": "pong"}:
            pass

    def kept() -> Any:
        found = flow.call("list_conversations", m.ConversationPageEnvelope, route_id=route_id)
        return found.data.items and found.data.items[0].ended_at is not None and found

    [conversation] = flow.poll(kept).data.items
    read = flow.call("get_conversation", m.ConversationEnvelope, conversation.conversation_id)
    assert isinstance(read.data.messages[0].at, datetime)
    flow.call("delete_conversation", m.ConversationEnvelope, conversation.conversation_id)
    revoked = flow.call("revoke_route", m.RouteEnvelope, route_id).data
    assert revoked.status == m.RouteStatus("revoked") and isinstance(revoked.revoked_at, datetime)


def avatars(flow: Flow) -> None:
    m = flow.models
    image = flow.upload(png_bytes(), "face.png", "image/png")
    body = m.UploadAvatarBody(image=image, name="Face")
    avatar = flow.call("upload_avatar", m.AvatarEnvelope, body=body).data
    png = flow.call("avatar_png", flow.generated.types.File, f"{avatar.avatar_id}.png")
    assert png.payload.read() == png_bytes()
    assert flow.call("list_avatars", m.AvatarPageEnvelope).data.items
    flow.call("get_avatar", m.AvatarEnvelope, avatar.avatar_id)
    assert flow.call("list_avatars_hosted", m.HostedAvatarListEnvelope).data
    flow.call("get_avatar_hosted", m.HostedAvatarEnvelope, avatar.avatar_id)
    flow.made["avatar_id"] = avatar.avatar_id


def sessions(flow: Flow) -> None:
    m = flow.models
    start = m.StartSessionSessionStart(avatar_id=flow.made["avatar_id"])
    started = flow.call("start_session", m.StartedSessionEnvelope, body=start).data
    session_id = started.session.session_id
    listed = flow.call("list_sessions", m.SessionListEnvelope).data
    assert session_id in [s.session_id for s in listed]
    flow.call("get_session", m.SessionEnvelope, session_id)
    profile = flow.call("get_session_profile", m.SessionProfileEnvelope, session_id).data
    assert profile.session_token == started.session_token
    flow.call("session_status", m.SessionPageStatusEnvelope, session_id)
    stop = m.StopSessionsSessionStop(session_ids=[session_id])
    assert flow.call("stop_sessions", m.StopOutcomeEnvelope, body=stop).data.stopped == [session_id]


def generation(flow: Flow) -> None:
    m = flow.models
    body = m.GenerateAvatarGenerationCreate(prompt="a calm face", width=256, height=256)
    task = flow.call("generate_avatar", m.TaskSubmittedEnvelope, body=body).data

    def completed() -> Any:
        view = flow.call("get_generation_status", m.GenerationStatusEnvelope, task.task_id).data
        return view.status == m.GenerationStatusStatus("COMPLETED") and view

    generated = flow.poll(completed, timeout=60)
    flow.call("delete_avatar_hosted", None, generated.avatar_id)


def builds(flow: Flow) -> None:
    """An avatar built from scikit-image's astronaut, read until READY, then deleted."""
    m = flow.models
    out = io.BytesIO()
    Image.fromarray(skimage_data.astronaut()).save(out, format="PNG")
    body = m.BuildAvatarAvatarBuildCreate(base64.b64encode(out.getvalue()).decode(), "Astro")
    avatar_id = flow.call("build_avatar", m.AvatarBuildEnvelope, body=body).data.avatar_id

    def ready() -> Any:
        avatar = flow.call("get_avatar_hosted", m.HostedAvatarEnvelope, avatar_id).data
        assert avatar.status.value in ("PENDING", "BUILDING", "READY"), avatar
        return avatar.status.value == "READY" and avatar

    assert flow.poll(ready, timeout=60).themes
    flow.call("delete_avatar_hosted", None, avatar_id)


def images(flow: Flow) -> None:
    """A picture drawn at once, and one drawn by a task (through the fake images backend)."""
    m = flow.models
    ratio = m.GenerateImageImageCreateAspectRatio("1:1")
    body = m.GenerateImageImageCreate(prompt="a kite", aspect_ratio=ratio)
    drawn = flow.call("generate_image", m.GenerateOutputEnvelope, body=body).data
    assert base64.b64decode(drawn.image)[:3] == b"\xff\xd8\xff"  # a JPEG
    ratio = m.GenerateImageAsyncImageTaskCreateAspectRatio("16:9")
    body = m.GenerateImageAsyncImageTaskCreate(prompt="a kite", aspect_ratio=ratio, seed=3)
    task = flow.call("generate_image_async", m.TaskSubmittedEnvelope, body=body).data

    def completed() -> Any:
        view = flow.call("get_image_generation_status", m.ImageStatusEnvelope, task.task_id).data
        return view.status == m.ImageStatusStatus("COMPLETED") and view

    assert base64.b64decode(flow.poll(completed, timeout=60).image)[:3] == b"\xff\xd8\xff"


def upscale(flow: Flow) -> None:
    m = flow.models
    video = flow.upload(mp4_bytes(), "clip.mp4", "video/mp4")
    resolution = m.SubmitUpscaleResolution("1080p")
    body = m.SubmitUpscaleBody(file=video)
    task = flow.call("submit_upscale", m.TaskSubmittedEnvelope, body=body, resolution=resolution)

    def completed() -> Any:
        view = flow.call("get_upscale", m.UpscaleTaskEnvelope, task.data.task_id).data
        return view.status == m.UpscaleTaskStatus("COMPLETED") and view

    view = flow.poll(completed, timeout=60)
    output = view.result.output
    assert isinstance(output.readable_until, datetime)
    link = urlsplit(output.file_url)
    query = {name: values[0] for name, values in parse_qs(link.query).items()}
    download = flow.call("result_file", flow.generated.types.File, view.task_id, **query)
    payload = download.payload.read()
    assert len(payload) == output.size_bytes
    with av.open(io.BytesIO(payload)) as container:
        assert container.streams.video[0].codec_context.width == output.width
    flow.call("list_upscales", m.UpscaleTaskPageEnvelope)
    deleted = flow.call("delete_upscale", m.UpscaleTaskEnvelope, view.task_id).data
    assert isinstance(deleted.result, flow.generated.types.Unset)


def speech(flow: Flow) -> None:
    """Speech both ways, the sample clip of a premade voice, and a voice cloned from speech."""
    m = flow.models
    premade = flow.call("list_premade_profiles", m.VoiceProfilesEnvelope).data[0]
    link = urlsplit(premade.sample_clip)
    query = {name: values[0] for name, values in parse_qs(link.query).items()}
    clip = flow.call("voice_sample", flow.generated.types.File, premade.id, **query)
    assert clip.payload.read(4) == b"RIFF"
    said = "The weather is nice today."
    kinds = m.TextToSpeechTTSCreateReturnType
    body = m.TextToSpeechTTSCreate(said, premade.id, kinds("b64_audio_str"))
    wav = base64.b64decode(flow.call("text_to_speech", m.TTSEnvelope, body=body).data.b64_audio_str)
    body = m.TextToSpeechTTSCreate(said, premade.id, kinds("file_url"))
    link = urlsplit(flow.call("text_to_speech", m.TTSEnvelope, body=body).data.file_url)
    query = {name: values[0] for name, values in parse_qs(link.query).items()}
    speech_id = link.path.split("/")[-2]
    kept = flow.call("speech_file", flow.generated.types.File, speech_id, **query)
    assert kept.payload.read(4) == b"RIFF"
    heard = m.SpeechToTextSTTCreate(base64.b64encode(wav).decode())
    assert flow.call("speech_to_text", m.STTEnvelope, body=heard).data.input_duration > 0
    names = [f"clip{index}.wav" for index in range(6)]
    annotations = "".join(f"{name}|{said}\n" for name in names).encode()
    body = m.CloneVoiceBody(
        audio_samples=[flow.upload(wav, name, "audio/wav") for name in names],
        annotation_list=flow.upload(annotations, "list.txt", "text/plain"),
        name="Matched",
    )
    task = flow.call("clone_voice", m.TaskSubmittedEnvelope, body=body).data

    def completed() -> Any:
        view = flow.call("get_clone_status", m.CloneStatusEnvelope, task.task_id).data
        return view.status == m.CloneStatusStatus("COMPLETED") and view

    profile_id = flow.poll(completed, timeout=60).profile_id
    assert profile_id in [
        p.id for p in flow.call("list_voice_profiles", m.VoiceProfilesEnvelope).data
    ]
    flow.call("get_voice_profile", m.VoiceProfileEnvelope, profile_id)
    flow.call("delete_voice_profile", m.NothingEnvelope, profile_id)


def usage(flow: Flow) -> None:
    m = flow.models
    page = flow.call("get_usage", m.UsagePageEnvelope).data
    assert page.totals.upscale_billable_seconds > 0
    assert page.totals.talking_video_seconds > 0 and page.totals.motion_video_seconds > 0
    upscales = flow.call("get_usage", m.UsagePageEnvelope, kind=m.GetUsageKind("upscale")).data
    assert [item.kind for item in upscales.items] == [m.UsageItemKind("upscale")]
    assert upscales.totals.session_seconds == 0


def webhooks(flow: Flow) -> None:
    m = flow.models
    secret = flow.call("get_webhook_secret", m.WebhookSecretEnvelope).data.secret
    assert flow.call("rotate_webhook_secret", m.WebhookSecretEnvelope).data.secret != secret


def videos(flow: Flow) -> None:
    """A photo speaking a text with a premade voice, then a recording with prompted motions,
    each found by serve's own face finder and rendered by its task workers."""
    m = flow.models
    photo = io.BytesIO()
    Image.fromarray(skimage_data.astronaut()).resize((320, 320)).save(photo, format="JPEG")
    image = base64.b64encode(photo.getvalue()).decode()
    talk = m.GenerateTalkingAvatarTalkingVideoCreate(
        image=image, text="Hello.", voice_profile_id="espeak-en-us"
    )
    submitted = flow.call("generate_talking_avatar", m.TaskSubmittedEnvelope, body=talk)

    def completed(operation: str, task_id: str) -> Callable[[], Any]:
        def check() -> Any:
            view = flow.call(operation, m.VideoStatusEnvelope, task_id).data
            assert view.status != m.VideoStatusStatus("FAILED"), view.error
            return view.status == m.VideoStatusStatus("COMPLETED") and view

        return check

    view = flow.poll(completed("get_talking_avatar_status", submitted.data.task_id), timeout=60)
    link = urlsplit(view.file_url)
    query = {name: values[0] for name, values in parse_qs(link.query).items()}
    payload = flow.call("result_file", flow.generated.types.File, view.task_id, **query)
    with av.open(io.BytesIO(payload.payload.read())) as container:
        assert abs(float(container.duration) / 1e6 - view.output_duration) < 0.1
    audio = base64.b64encode(engine.wav_bytes(bytes(16000), 8000)).decode()
    move = m.GenerateAvatarMotionMotionVideoCreate(
        image=image, audio=audio, positive_prompt="nodding", negative_prompt=""
    )
    submitted = flow.call("generate_avatar_motion", m.TaskSubmittedEnvelope, body=move)
    flow.poll(completed("get_avatar_motion_status", submitted.data.task_id), timeout=60)


def cleanup(flow: Flow) -> None:
    m = flow.models
    flow.call("delete_avatar", m.AvatarEnvelope, flow.made["avatar_id"])
    flow.call("delete_agent", m.AgentEnvelope, flow.made["agent_id"])
    other = flow.call("create_agent", m.AgentEnvelope, body=m.CreateAgentAgentCreate(name="B"))
    flow.call("delete_agent_by_method", m.AgentEnvelope, other.data.agent_id)


FLOW = [
    health, agents, routes, conversations, avatars, sessions, generation, upscale, speech,
    videos, images, builds, usage, webhooks, cleanup,
]  # fmt: skip


def test_the_flow_through_the_generated_client(generated, server, poll):
    client = generated.package.AuthenticatedClient(
        base_url=server.base, token=server.key, raise_on_unexpected_status=True, timeout=30
    )
    flow = Flow(generated, client, poll, server.base)
    with client:
        for step in FLOW:
            step(flow)
    driven = {op for op in generated.operations if not op.startswith(HEAD_PREFIX)}
    assert driven - flow.called == set(NOT_DRIVEN)
