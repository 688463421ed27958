"""Attack: bytes that are not UTF-8 inside a JSON body (`curl --data-binary
$'{"name":"\\xff"}'`) on every endpoint that reads one, against a real `serve`: each answers
400 BAD_REQUEST, nothing is stored, and serve logs no traceback."""

from __future__ import annotations

import httpx
import pytest

from tests.service.abuse import assert_clean_log

BODIES = [b'{"name":"\xff"}', b'{"prompt":"a\xed\xa0\x80"}', b'{"session_ids":["\xc0\xaf"]}']


@pytest.fixture(scope="module")
def server(start_serve_module):
    return start_serve_module()


@pytest.fixture(scope="module")
def paths(server) -> list[str]:
    """The seven endpoints of the report, with ids of real resources."""

    def create(path: str, body: dict) -> dict:
        response = httpx.post(server.base + path, headers=server.auth, json=body, timeout=10)
        assert response.status_code in (200, 201), response.text
        return response.json()["data"]

    agent = create("/v1/agents", {"name": "Ada"})["agent_id"]
    route = create(f"/v1/agents/{agent}/routes", {})["id"]
    return [
        "/v1/agents",
        f"/v1/agents/{agent}/update",
        f"/v1/agents/{agent}/routes",
        f"/v1/agent-routes/{route}/update",
        "/v1/interactive/start_session",
        "/v1/interactive/stop_sessions",
        "/v1/avatar/async_generate",
    ]


def test_bytes_that_are_not_utf8_get_400_everywhere(server, paths):
    answers = {}
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        before = client.get("/v1/agents").json()["data"]["items"]
        for path in paths:
            for body in BODIES:
                headers = {"Content-Type": "application/json"}
                response = client.post(path, content=body, headers=headers)
                answers[path, body] = response.status_code
                assert response.status_code == 400, (path, body, response.text)
                error = response.json()["error"]
                assert error["code"] == "BAD_REQUEST", error
                assert "is not part of UTF-8 text" in error["message"], error
        assert client.get("/v1/agents").json()["data"]["items"] == before
    assert set(answers.values()) == {400}
    assert_clean_log(server)
