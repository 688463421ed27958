"""No input yields a 500: every endpoint is fuzzed with malformed and hostile requests
(hypothesis), and schemathesis checks the API against its own OpenAPI document.

4xx answers on the API must carry the API's error body; the HTML pages answer 200/404/410."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient
from PIL import Image
from schemathesis import checks

import engine
from service.app import create_app
from service.domain.keys import create_key
from service.settings import load_settings
from tests.service.conftest import mp4_bytes
from tests.service.fake_images import FakeImages
from tests.service.test_upscale import run_next

# (method, path template) of every endpoint the app serves; `test_every_endpoint_is_fuzzed`
# fails when one is added without being listed here.
ENDPOINTS = [
    ("GET", "/healthz"),
    ("GET", "/avatars/{file_name}"),
    ("GET", "/r/{route_id}"),
    ("GET", "/i/{session_id}"),
    ("GET", "/i/{session_id}/status"),
    ("GET", "/static/{name}"),
    ("POST", "/v1/avatars"),
    ("GET", "/v1/avatars"),
    ("GET", "/v1/avatars/{avatar_id}"),
    ("POST", "/v1/avatars/{avatar_id}/delete"),
    ("GET", "/v1/avatar/list"),
    ("GET", "/v1/avatar/{avatar_id}"),
    ("DELETE", "/v1/avatar/{avatar_id}"),
    ("POST", "/v1/agents"),
    ("GET", "/v1/agents"),
    ("GET", "/v1/agents/{agent_id}"),
    ("POST", "/v1/agents/{agent_id}/update"),
    ("POST", "/v1/agents/{agent_id}/delete"),
    ("DELETE", "/v1/agents/{agent_id}"),
    ("POST", "/v1/agents/{agent_id}/routes"),
    ("GET", "/v1/agents/{agent_id}/routes"),
    ("GET", "/v1/agent-routes"),
    ("GET", "/v1/agent-routes/{route_id}"),
    ("POST", "/v1/agent-routes/{route_id}/update"),
    ("POST", "/v1/agent-routes/{route_id}/revoke"),
    ("POST", "/v1/interactive/start_session"),
    ("GET", "/v1/interactive/list"),
    ("GET", "/v1/interactive/sessions/{session_id}"),
    ("GET", "/v1/interactive/session/{session_id}/profile"),
    ("POST", "/v1/interactive/stop_sessions"),
    ("GET", "/v1/usage"),
    ("POST", "/v1/avatar/async_generate"),
    ("GET", "/v1/avatar/async_generate/{task_id}/status"),
    ("POST", "/v1/avatar/async_generate/{task_id}/cancel"),
    ("GET", "/v1/conversations"),
    ("GET", "/v1/conversations/{conversation_id}"),
    ("POST", "/v1/conversations/{conversation_id}/delete"),
    ("GET", "/v1/webhooks/secret"),
    ("POST", "/v1/webhooks/secret/rotate"),
    ("POST", "/v1/video/upscale"),
    ("GET", "/v1/video/upscale"),
    ("GET", "/v1/video/upscale/{task_id}"),
    ("POST", "/v1/video/upscale/{task_id}/cancel"),
    ("POST", "/v1/video/upscale/{task_id}/delete"),
    ("GET", "/files/{task_id}/output.mp4"),
    ("GET", "/v1/voice/premade_profiles"),
    ("GET", "/v1/voice/profiles"),
    ("GET", "/v1/voice/profiles/{profile_id}"),
    ("DELETE", "/v1/voice/profiles/{profile_id}"),
    ("POST", "/v1/voice/clone"),
    ("GET", "/v1/voice/clone/{task_id}/status"),
    ("POST", "/v1/voice/clone/{task_id}/cancel"),
    ("GET", "/voice/samples/{profile_id}/sample.wav"),
    ("POST", "/v1/speech/tts"),
    ("POST", "/v1/speech/stt"),
    ("GET", "/files/speech/{speech_id}/audio.wav"),
    ("POST", "/v1/video/async_generate_talking_avatar"),
    ("GET", "/v1/video/async_generate_talking_avatar/{task_id}/status"),
    ("POST", "/v1/video/async_generate_talking_avatar/{task_id}/cancel"),
    ("POST", "/v1/video/async_generate_avatar_motion"),
    ("GET", "/v1/video/async_generate_avatar_motion/{task_id}/status"),
    ("POST", "/v1/video/async_generate_avatar_motion/{task_id}/cancel"),
    ("POST", "/v1/avatar/async_build"),
    ("POST", "/v1/image/generate"),
    ("POST", "/v1/image/async_generate"),
    ("GET", "/v1/image/async_generate/{task_id}/status"),
    ("POST", "/v1/image/async_generate/{task_id}/cancel"),
]
HTML_PAGES = {"/r/{route_id}", "/i/{session_id}"}
FIELDS = [
    "name", "avatar_id", "voice_id", "voice_profile_id", "instruction", "instructions",
    "llm_model", "model", "greeting", "tools", "label", "validity_seconds", "session_ids",
    "prompt", "width", "height", "seed", "webhook", "idle_timeout", "use_beta",
    "text", "return_type", "audio", "opts", "chinese_language", "aspect_ratio", "images", "image",
    "positive_prompt", "negative_prompt",
]  # fmt: skip
QUERY = ["limit", "cursor", "status", "agent_id", "since", "until", "v", "route_id", "session_id",
         "kind", "resolution", "expires", "signature"]  # fmt: skip
# Query values: any text, or a value some parameter takes (so the upscale upload gets parsed).
query_values = st.text(max_size=40) | st.sampled_from(["1080p", "2k", "4k", "1", "10"])
# Multipart endpoints: their file part, a text part, and how the file part is named and typed.
UPLOADS = {
    "/v1/avatars": ("image", "name", "x.png", "image/png"),
    "/v1/video/upscale": ("file", "webhook_url", "x.mp4", "video/mp4"),
    "/v1/voice/clone": ("audio_samples", "annotation_list", "x.wav", "audio/wav"),
}
# Templates whose {task_id} is an upscale task (elsewhere it is a generation task).
UPSCALE_PATHS = ("/v1/video/upscale", "/files/")
VIDEO_PATHS = ("/v1/video/async_generate_",)
ERROR_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
EXCEPTION_REPR = re.compile(r"\b[A-Z]\w*(Error|Exception)\(")
# Messages repeat at most 100 characters of the input; the rest of one is the service's words.
MAX_MESSAGE = 400
# Derandomized: every run draws the same examples, so a failure reproduces and a pass is not luck.
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=True,
)


class World:
    """One app with a few real resources, shared by the fuzzing tests of this module."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.ctx = ctx = client.app.state.ctx
        with client.portal() as portal:
            plaintext, _ = portal.call(create_key, ctx.store, ctx.clock, "fuzzer")
        self.auth = {"Authorization": f"Bearer {plaintext}"}
        self.ids = self._create_resources()

    def _create_resources(self) -> dict[str, str]:
        image = {"image": ("a.png", png(8, 8), "image/png")}
        avatar = self.post_ok("/v1/avatars", files=image)["avatar_id"]
        agent = self.post_ok("/v1/agents", json={"name": "F", "avatar_id": avatar})["agent_id"]
        route = self.post_ok(f"/v1/agents/{agent}/routes", json={})["id"]
        session = self.post_ok("/v1/interactive/start_session", json={"avatar_id": avatar})
        video = {"file": ("a.mp4", VIDEO, "video/mp4")}
        done = self.post_ok("/v1/video/upscale?resolution=2k", files=video)["task_id"]
        run_next(self)  # completes it here (the app has no task worker; nothing else waits)
        status = self.client.get(f"/v1/video/upscale/{done}", headers=self.auth).json()["data"]
        self.file_url = status["result"]["output"]["file_url"]
        upscale = self.post_ok("/v1/video/upscale?resolution=2k", files=video)["task_id"]
        task = self.post_ok("/v1/avatar/async_generate", json={"prompt": "a fuzzer"})["task_id"]
        # The socket fuzzing talks through a route of its own, which no fuzzed path can name.
        talker = self.post_ok("/v1/agents", json={"name": "T", "greeting": "Hi"})["agent_id"]
        talk = self.post_ok(f"/v1/agents/{talker}/routes", json={})["id"]
        with self.client.websocket_connect(f"/r/{talk}/ws") as ws:
            ws.receive_json(), ws.receive_json()  # ready, the greeting
            ws.send_json({"type": "message", "text": "hi"})  # kept from the first message
            while ws.receive_json()["type"] != "message":
                pass
        conversations = self.client.get("/v1/conversations", headers=self.auth).json()
        tts = {"text": "Hi.", "voice_profile_id": "espeak-en-us", "return_type": "file_url"}
        speech_url = self.post_ok("/v1/speech/tts", json=tts)["file_url"]
        speaking = {"image": b64(png(16, 16)), "audio": b64(WAV)}
        video_task = self.post_ok("/v1/video/async_generate_talking_avatar", json=speaking)
        return {
            "talk_route_id": talk,
            "conversation_id": conversations["data"]["items"][0]["conversation_id"],
            "avatar_id": avatar,
            "file_name": f"{avatar}.png",
            "agent_id": agent,
            "route_id": route,
            "session_id": session["session"]["session_id"],
            "task_id": task,
            "upscale_task_id": upscale,
            "video_task_id": video_task["task_id"],
            "name": "pages.css",
            "profile_id": "espeak-en-us",
            "speech_id": speech_url.split("/files/speech/")[1].split("/")[0],
        }

    def ids_for(self, template: str) -> dict[str, str]:
        """The ids to fill `template` with (its {task_id} is a task of its own kind)."""
        if template.startswith(UPSCALE_PATHS):
            return self.ids | {"task_id": self.ids["upscale_task_id"]}
        if template.startswith(VIDEO_PATHS):
            return self.ids | {"task_id": self.ids["video_task_id"]}
        return self.ids

    def post_ok(self, path: str, **kwargs: Any) -> Any:
        response = self.client.post(path, headers=self.auth, **kwargs)
        assert response.status_code in (200, 201), response.text
        return response.json()["data"]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png(width: int, height: int, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 200)).save(out, format=fmt)
    return out.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[World]:
    data_dir = tmp_path_factory.mktemp("fuzz")
    images = FakeImages().start()  # image generation draws through it (else: 503)
    # No worker runs here, so tasks pile up: the queue must not fill (503).
    settings = load_settings(
        {}, data_dir=data_dir, rate_limit=1e9, queue_limit=100_000, x264_preset="ultrafast",
        image_base_url=images.url(),
    )  # fmt: skip
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield World(client)
    images.stop()


# Strategies

huge_ints = st.sampled_from([2**63, -(2**63) - 1, 10**40, -1, 0, 315_360_001, 2**53 + 1])
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | huge_ints
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50)
    | st.sampled_from(["", "\x00", "\ud7ff\U0010ffff", "a" * 20_001, "🙂" * 101, "rt_", "null"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=12), json_values, max_size=5)
DEEP = 50_000
# Byte sequences that are not UTF-8: a lone continuation byte, bytes never used, an overlong
# '/', an encoded surrogate, a code point past U+10FFFF, a sequence cut short.
NOT_UTF8 = [
    b"\x80",
    b"\xff",
    b"\xfe\xff",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
]
# Each inside a string value and inside a key of an otherwise valid body.
NOT_UTF8_BODIES = [b'{"name": "a' + bad + b'"}' for bad in NOT_UTF8] + [
    b'{"' + bad + b'": 1}' for bad in NOT_UTF8
]
HOSTILE_BODIES = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"text"',
    b"1e999999",
    b"NaN",
    b"\xff\xfe\x00",
    b'{"name": 1e400}',
    b'{"validity_seconds": 1e400}',
    b'{"validity_seconds": 1.0}',
    b'{"validity_seconds": true}',
    b'{"validity_seconds": 315360001}',
    b'{"name": "a", "name": "b"}',
    b'{"name": "\\ud800"}',
    b'{"name": "' + b"a" * 101 + b'", "label": "' + b"b" * 101 + b'"}',
    b'{"greeting": "' + b"g" * 1001 + b'", "instruction": "' + b"i" * 20_001 + b'"}',
    b'{"tools": {"a": "' + b"x" * 70_000 + b'"}}',
    b'{"session_ids": [' + b'"a",' * 100 + b'"b"]}',
    b'{"session_ids": [], "avatar_id": null, "label": null}',
    b'{"prompt": "p", "width": 1e400, "seed": 9223372036854775808}',
    b'{"prompt": "p", "webhook": {"url": "https://[::1", "auth_token": null}}',
    b'{"prompt": "p", "webhook": {"url": "https://x:0/"}}',
    b"[" * DEEP + b"]" * DEEP,
    b'{"tools": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"tools": ' + b'{"a":' * 3_000 + b"1" + b"}" * 3_000 + b"}",
    b'{"prompt": "\xff", "webhook": {"url": "https://h.example/\xc0"}}',
    b'{"session_ids": ["\xed\xa0\x80"]}',
    *NOT_UTF8_BODIES,
]
raw_bodies = st.sampled_from(HOSTILE_BODIES) | st.binary(max_size=200)


@st.composite
def json_request(draw) -> dict[str, Any]:
    if draw(st.booleans()):
        body = json.dumps(draw(objects | json_values), ensure_ascii=draw(st.booleans()))
        content = body.encode("utf-8", "surrogatepass")
        quotes = [i for i, byte in enumerate(content) if byte == ord('"')]
        if quotes and draw(st.booleans()):  # bytes that are not UTF-8 inside a key or string
            at = draw(st.sampled_from(quotes)) + 1
            content = content[:at] + draw(st.sampled_from(NOT_UTF8)) + content[at:]
    else:
        content = draw(raw_bodies)
    content_type = draw(
        st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"])
    )
    return {"content": content, "headers": {"Content-Type": content_type}}


def _multipart(parts: list[tuple[str, str | None, bytes, str]], boundary: str) -> bytes:
    out = []
    for name, filename, data, media_type in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
        head += f"Content-Type: {media_type}\r\n\r\n"
        out.append(head.encode("utf-8") + data + b"\r\n")
    return b"".join(out) + f"--{boundary}--\r\n".encode()


IMAGES = {
    "png": png(4, 4),
    "jpeg": png(4, 4, "JPEG"),
    "gif": png(4, 4, "GIF"),
    "too_wide": png(4097, 1),
    "bomb": png(5000, 5000),
    "truncated": png(64, 64)[:60],
}


VIDEO = mp4_bytes(32, 18, frames=2)
WAV = engine.wav_bytes(bytes(800), 8000)
PAYLOADS = {
    "/v1/avatars": list(IMAGES.values()),
    "/v1/video/upscale": [VIDEO, VIDEO[:200], VIDEO + b"junk", mp4_bytes(rate=61, frames=2)],
    "/v1/voice/clone": [WAV, WAV[:30], b"x.wav|hello", b"RIFF"],
}
TEXT_PARTS = st.text(max_size=120).map(
    lambda t: t.encode("utf-8", "surrogatepass")
) | st.sampled_from([b"https://example.com/h", b"http://127.0.0.1/", b"\xff\xfe", b"a" * 9_000])


@st.composite
def multipart_request(draw, template: str) -> dict[str, Any]:
    boundary = "fuzzboundary"
    file_part, text_part, file_name, media_type = UPLOADS[template]
    payload = draw(st.sampled_from(PAYLOADS[template]) | st.binary(max_size=100))
    names = st.sampled_from([file_part, text_part, "webhook_token", "name", ""])
    parts = [
        (draw(names), file_name, payload, media_type),
        (draw(names | st.just(text_part)), None, draw(TEXT_PARTS), "text/plain"),
    ]
    body = _multipart(draw(st.permutations(parts)), boundary)
    mangle = draw(st.sampled_from(["none", "truncate", "no_boundary", "other_boundary", "json"]))
    content_type = f"multipart/form-data; boundary={boundary}"
    if mangle == "truncate":
        body = body[: draw(st.integers(0, len(body)))]
    elif mangle == "no_boundary":
        content_type = "multipart/form-data"
    elif mangle == "other_boundary":
        content_type = "multipart/form-data; boundary=nope"
    elif mangle == "json":
        content_type = "application/json"
    return {"content": body, "headers": {"Content-Type": content_type}}


def path_values(world: World, template: str, name: str) -> st.SearchStrategy[str]:
    hostile = st.text(min_size=1, max_size=300) | st.sampled_from(
        ["..", "%00", "rt_" + "A" * 22, "a" * 5000, "🙂", "ses_x.png", " "]
    )
    return st.just(world.ids_for(template)[name]) | hostile


auth_variants = st.sampled_from(["valid", "none", "garbage", "basic"])


def _headers(world: World, variant: str) -> dict[str, str]:
    return {
        "valid": world.auth,
        "none": {},
        "garbage": {"Authorization": "Bearer \x7f\x01 " + "x" * 300},
        "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
    }[variant]


def assert_no_server_error(response, path_template: str) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.request.method == "HEAD":
        assert response.content == b""
        return
    is_html = response.headers.get("content-type", "").startswith("text/html")
    if path_template in HTML_PAGES and is_html:
        assert response.status_code in (200, 404, 410), response.status_code
        return
    # Anything else is JSON, including a page path the router never matched (e.g. "/r/a%2Fb").
    assert not is_html, response.text[:200]
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, body
        error = body["error"]
        assert set(error) <= {"code", "message", "details"}, error
        assert ERROR_CODE.match(error["code"]), error
        assert isinstance(error["message"], str) and error["message"], error
        # Words, not an exception's repr; and no long echo of what was sent.
        assert not EXCEPTION_REPR.search(error["message"]), error
        assert len(error["message"]) <= MAX_MESSAGE, error


def test_every_endpoint_is_fuzzed(world):
    served = set()
    for route in world.client.app.routes:
        for method in getattr(route, "methods", ()):
            if method not in ("HEAD", "OPTIONS") and not route.path.startswith("/schema"):
                served.add((method, re.sub(r":[a-z]+\}", "}", route.path)))
    assert served == set(ENDPOINTS)


@pytest.mark.parametrize(("method", "template"), ENDPOINTS, ids=[f"{m} {p}" for m, p in ENDPOINTS])
@FUZZ
@given(data=st.data())
def test_no_request_yields_a_server_error(world, method, template, data):
    names = re.findall(r"\{(\w+)\}", template)
    path = template.format(
        **{name: quote(data.draw(path_values(world, template, name)), safe="") for name in names}
    )
    query = data.draw(st.dictionaries(st.sampled_from(QUERY), query_values, max_size=3))
    auth = _headers(world, data.draw(auth_variants))
    kwargs: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if method == "POST":
        upload = template in UPLOADS
        kwargs = data.draw(multipart_request(template) if upload else json_request())
        headers = kwargs.pop("headers")
    response = world.client.request(method, path, params=query, headers=auth | headers, **kwargs)
    assert_no_server_error(response, template)
    if template.startswith("/v1/") and auth != world.auth:
        assert response.status_code == 401, response.text  # known path or not


@FUZZ
@given(request=multipart_request("/v1/video/upscale"), resolution=st.sampled_from(["2k", "x"]))
def test_hostile_uploads_to_the_upscale_endpoint(world, request, resolution):
    """With a valid key and (mostly) a valid resolution, so that every body gets parsed."""
    headers = world.auth | request.pop("headers")
    path = f"/v1/video/upscale?resolution={resolution}"
    response = world.client.post(path, headers=headers, **request)
    assert_no_server_error(response, "/v1/video/upscale")
    uploads = world.ctx.settings.data_dir / "uploads"
    assert not [p for p in uploads.iterdir() if p.name.startswith(".")]  # no partial file left


HOSTILE_RANGES = [
    "bytes=0-0", "bytes=-0", "bytes=-1", "bytes=0-", "bytes=99999999999999999999-",
    "bytes=-99999999999999999999", "bytes=1-99999999999999999999", "bytes=5-1", "bytes=0-1,3-4",
    "items=0-1", "bytes=--1", "bytes= 1-2", "bytes=\x7f", "bytes=", "", "bytes=1e3-",
]  # fmt: skip


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_hostile_ranges_to_a_result_file(world, method):
    for value in HOSTILE_RANGES:
        response = world.client.request(method, world.file_url, headers={"Range": value})
        assert response.status_code in (200, 206, 416), (value, response.status_code)
        if method == "GET":
            assert_no_server_error(response, "")


@pytest.mark.parametrize(
    "template", [t for m, t in ENDPOINTS if m == "POST" and "avatars" not in t]
)
def test_hostile_bodies_to_every_json_endpoint(world, template):
    path = template.format(**world.ids_for(template))
    for body in HOSTILE_BODIES:
        response = world.client.post(path, content=body, headers=world.auth)
        assert_no_server_error(response, template)


def _json_body_operations(world: World) -> list[str]:
    """The path templates of every POST whose request body is JSON (from the document)."""
    document = world.client.get("/schema/openapi.json").json()
    return [
        path
        for path, operations in document["paths"].items()
        if "application/json"
        in operations.get("post", {}).get("requestBody", {}).get("content", {})
    ]


def test_bytes_that_are_not_utf8_are_a_bad_request_wherever_json_is_read(world):
    templates = _json_body_operations(world)
    assert len(templates) >= 7, templates  # agents, routes, sessions, generation
    for template in templates:
        path = template.format(**world.ids_for(template))
        for body in NOT_UTF8_BODIES:
            response = world.client.post(
                path, content=body, headers=world.auth | {"Content-Type": "application/json"}
            )
            assert response.status_code == 400, (template, body, response.text)
            error = response.json()["error"]
            assert error["code"] == "BAD_REQUEST" and "UTF-8" in error["message"], error


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


HOSTILE_QUERIES = [
    {"cursor": _cursor(b'[18446744073709551615, "x"]')},
    {"cursor": _cursor(b'[-9223372036854775809, "x"]')},
    {"cursor": _cursor(b'{"ms": 1}')},
    {"cursor": _cursor(b'[1, "\\ud800"]')},
    {"cursor": "!!!"},
    {"cursor": "A" * 5000},
    {"limit": "0"},
    {"limit": "201"},
    {"limit": "1e3"},
    {"limit": "9" * 30},
    {"status": "ACTIVE"},
    {"agent_id": "\x00"},
    {"since": "9999-12-31T23:59:59-23:59"},
    {"until": "0001-01-01T00:00:00+23:59"},
    {"since": "2026-02-30T00:00:00Z"},
    {"since": "x" * 300},
]
V1_GETS = [t for m, t in ENDPOINTS if m == "GET" and t.startswith("/v1/")]


@pytest.mark.parametrize("template", V1_GETS)
def test_hostile_queries_to_every_read(world, template):
    path = template.format(**world.ids_for(template))
    for query in HOSTILE_QUERIES:
        response = world.client.get(path, params=query, headers=world.auth)
        assert_no_server_error(response, template)


@pytest.mark.parametrize(
    "raw",
    [
        "/r/%FF%FE", "/i/%ED%A0%80", "/i/%C0%AF/status", "/v1/agents/%ED%A0%80",
        "/v1/agent-routes?agent_id=%FF", "/v1/usage?since=%ED%A0%80", "/avatars/%FF.png",
        "/static/%2E%2E%2Fpages.py",
    ],
)  # fmt: skip
def test_invalid_percent_encodings(world, raw):
    response = world.client.get(raw, headers=world.auth)
    page = {"/r/": "/r/{route_id}", "/i/": "/i/{session_id}"}.get(raw[:3], "")
    assert_no_server_error(response, "" if raw.endswith("/status") else page)


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_wrong_methods_get_the_error_body(world, method):
    for _, template in ENDPOINTS:
        if (method, template) in ENDPOINTS:
            continue
        path = template.format(**world.ids_for(template))
        response = world.client.request(method, path, headers=world.auth)
        assert response.status_code in (404, 405)
        assert_no_server_error(response, "")


# Schemathesis: the API against its own OpenAPI document.


@pytest.fixture(scope="module")
def api_schema(world):
    # Extra query parameters are generated too: every operation refuses those it does not declare.
    config = schemathesis.config.SchemathesisConfig.from_dict({"headers": world.auth})
    raw = world.client.get("/schema/openapi.json").json()
    return schemathesis.openapi.from_dict(raw, config=config)


# The uploads are left to the multipart fuzzing above: schemathesis builds some of its
# multipart cases from values (ints, lists) that the test client itself cannot send.
schema = schemathesis.pytest.from_fixture("api_schema").exclude(method="POST", path=list(UPLOADS))


# Checks that do not apply here: the API refuses some schema-valid values on meaning (an
# avatar_id that names no avatar, a model not in AVATAR_MODELS) with 422; and the ignored-auth
# probes need a network transport (the hypothesis test above covers auth).
EXCLUDED_CHECKS = [checks.positive_data_acceptance, checks.ignored_auth]


@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)
def test_api_matches_its_openapi_document(case, world):
    response = world.client.request(**case.as_transport_kwargs())
    response.request.read()  # schemathesis reads the sent body (multipart is streamed)
    case.validate_response(response, excluded_checks=EXCLUDED_CHECKS)
    assert_no_server_error(response, "")


# The conversation sockets: no frame a visitor sends ends the conversation or the server.

socket_frames = st.one_of(
    st.text(max_size=300),
    json_values.map(json.dumps),
    st.builds(lambda text: json.dumps({"type": "message", "text": text}), st.text(max_size=4100)),
    st.sampled_from(['{"type": "message", "text": null}', '{"type": []}', "[]", "\x00", "{" * 500]),
)


@FUZZ
@given(frames=st.lists(socket_frames, min_size=1, max_size=4))
def test_no_socket_frame_breaks_the_conversation(world, frames):
    with world.client.websocket_connect(f"/r/{world.ids['talk_route_id']}/ws") as ws:
        assert ws.receive_json()["state"] == "ready"
        assert ws.receive_json()["type"] == "message"  # the greeting
        for frame in frames:
            ws.send_text(frame)
            answer = ws.receive_json()
            while answer["type"] == "delta":
                answer = ws.receive_json()
            assert answer["type"] in ("error", "message", "pong"), answer
        ws.send_json({"type": "ping"})
        assert ws.receive_json() == {"type": "pong"}
