"""Attack, small ones, against a real `serve`: names and labels holding control characters
or bidirectional overrides are refused (422 naming the field); the answers holding a session
token are not cacheable; an error repeats at most 100 characters of what was sent; and a
malformed multipart body is told in words, never as an exception's repr. No traceback in the
log."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.service.abuse import assert_clean_log
from tests.service.conftest import png_bytes

# NUL, ESC, CR/LF, DEL, a C1 control (NEL), a right-to-left override, a left-to-right isolate.
REFUSED = ["a\x00b", "\x1b[31m", "two\r\nlines", "del\x7f", "nel\x85", "gpj.\u202eexe", "\u2066x"]
# Right-to-left text and emoji are text like any other.
TAKEN = ["Zoë 😀", "שלום", "مرحبا", "Ada Lovelace"]
EXCEPTION_REPR = re.compile(r"\b[A-Z]\w*(Error|Exception)\(")


@pytest.fixture(scope="module")
def server(start_serve_module):
    return start_serve_module()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def agent_id(client) -> str:
    return client.post("/v1/agents", json={"name": "Ada"}).json()["data"]["agent_id"]


def _field_refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    assert [d["field"] for d in error["details"]] == [field], error
    assert "control characters or bidirectional overrides" in error["message"], error


def _avatar(client, name: str) -> httpx.Response:
    files = {"image": ("a.png", png_bytes(), "image/png")}
    return client.post("/v1/avatars", files=files, data={"name": name})


@pytest.mark.parametrize("text", REFUSED, ids=[ascii(t) for t in REFUSED])
def test_names_and_labels_refuse_controls_and_overrides(server, client, agent_id, text):
    route = client.post(f"/v1/agents/{agent_id}/routes", json={}).json()["data"]["id"]
    _field_refused(client.post("/v1/agents", json={"name": text}), "name")
    _field_refused(client.post(f"/v1/agents/{agent_id}/update", json={"name": text}), "name")
    _field_refused(client.post(f"/v1/agents/{agent_id}/routes", json={"label": text}), "label")
    _field_refused(client.post(f"/v1/agent-routes/{route}/update", json={"label": text}), "label")
    _field_refused(_avatar(client, text), "name")
    assert client.get(f"/v1/agents/{agent_id}").json()["data"]["name"] == "Ada"
    assert_clean_log(server)


@pytest.mark.parametrize("text", TAKEN)
def test_names_of_every_script_are_taken(client, agent_id, text):
    assert client.post("/v1/agents", json={"name": text}).status_code == 201
    route = client.post(f"/v1/agents/{agent_id}/routes", json={"label": text})
    assert route.status_code == 201 and route.json()["data"]["label"] == text
    assert _avatar(client, text).status_code == 201


def test_answers_with_a_session_token_are_not_stored(client):
    avatar_id = _avatar(client, "Face").json()["data"]["avatar_id"]
    started = client.post("/v1/interactive/start_session", json={"avatar_id": avatar_id})
    assert started.status_code == 200, started.text
    assert started.headers["cache-control"] == "no-store"
    session_id = started.json()["data"]["session"]["session_id"]
    profile = client.get(f"/v1/interactive/session/{session_id}/profile")
    assert profile.status_code == 200 and profile.json()["data"]["session_token"]
    assert profile.headers["cache-control"] == "no-store"


def _short_echo(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert "a" * 101 not in message and len(message) < 250, message
    return message


def test_errors_repeat_at_most_100_characters(server, client):
    long = "a" * 5000
    message = _short_echo(client.get(f"/v1/agents/{long}"), 404)
    assert "a" * 100 + "…" in message
    _short_echo(client.get(f"/v1/agent-routes/rt_{long}"), 404)
    _short_echo(client.get(f"/i/ses_{long}/status"), 404)
    _short_echo(client.post("/v1/agents", json={"name": "x", long: 1}), 422)
    files = {long[:1000]: ("a.png", b"x", "image/png")}  # a part's headers hold 4 KiB at most
    _short_echo(client.post("/v1/avatars", files=files), 422)
    assert_clean_log(server)


MULTIPART = "multipart/form-data; boundary=bnd"
PART = b'--bnd\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n'
MALFORMED = {
    b'--bnd\r\nContent-Disposition: form-data; name="\xff"\r\n\r\nx\r\n--bnd--\r\n': (
        "a part's headers are not UTF-8 text"
    ),
    PART + b'Content-Type: image/png; charset="\xfe"\r\n\r\nx\r\n--bnd--\r\n': (
        "a part's headers are not UTF-8 text"
    ),
    PART + b"\r\nabc": "Unexpected end of multipart stream",
    b"--bnd\r\nContent-Type: text/plain\r\n\r\nx\r\n--bnd--\r\n": "Missing Content-Disposition",
    b"--bnd\r\nX: " + b"h" * 10_000 + b"\r\n\r\n": "Maximum segment header length exceeded",
}


@pytest.mark.parametrize("body", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_multipart_body_is_told_in_words(server, client, body):
    answer = client.post("/v1/avatars", content=body, headers={"Content-Type": MULTIPART})
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith("The multipart body is malformed: "), message
    assert MALFORMED[body] in message and not EXCEPTION_REPR.search(message), message
    assert_clean_log(server)
