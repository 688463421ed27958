"""API conventions: authentication, the error body, limits, ids, timestamps, OpenAPI, health."""

from __future__ import annotations

import re

import pytest

from service.domain.keys import revoke_key

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer ak_nope"},
        {"Authorization": "Basic abc"},
        {"Authorization": ""},
    ],
)
def test_v1_requires_a_valid_bearer_key(api, headers):
    response = api.get("/v1/agents", headers)
    assert_error(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"] == "Bearer"


def test_revoked_key_is_refused(make_api):
    api = make_api(key_cache_ttl_s=0)
    auth = api.key("alice")
    assert api.get("/v1/agents", auth).status_code == 200
    with api.client.portal() as portal:
        key = portal.call(api.ctx.store.list_keys)[0]
        portal.call(revoke_key, api.ctx.store, api.ctx.clock, key.key_id)
    assert_error(api.get("/v1/agents", auth), 401, "UNAUTHORIZED")


def test_revocation_reaches_a_worker_after_the_cache_ttl(make_api):
    api = make_api(key_cache_ttl_s=30)
    auth = api.key("alice")
    assert api.get("/v1/agents", auth).status_code == 200
    with api.client.portal() as portal:
        key = portal.call(api.ctx.store.list_keys)[0]
        portal.call(revoke_key, api.ctx.store, api.ctx.clock, key.key_id)
    api.clock.advance(31)
    assert_error(api.get("/v1/agents", auth), 401, "UNAUTHORIZED")


def test_last_used_is_recorded_at_most_once_a_minute(api, alice, wait_until):
    def last_used():
        with api.client.portal() as portal:
            return portal.call(api.ctx.store.list_keys)[0].last_used_ms

    assert last_used() is None
    start = api.clock.now_ms()
    api.get("/v1/agents", alice)
    wait_until(lambda: last_used() == start)
    api.clock.advance(30)
    api.get("/v1/agents", alice)
    assert last_used() == start
    api.clock.advance(31)
    api.get("/v1/agents", alice)
    wait_until(lambda: last_used() == start + 61_000)


def test_unknown_path_and_method(api, alice):
    assert_error(api.get("/nowhere"), 404, "NOT_FOUND")
    assert_error(api.get("/v1/nowhere", alice), 404, "NOT_FOUND")
    response = api.call("PUT", "/v1/agents", alice)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == "GET, HEAD, POST, OPTIONS"


@pytest.mark.parametrize("path", ["/r/rt_x/ws", "/i/ses_x/ws"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_plain_request_to_a_socket_path_is_told_to_upgrade(api, path, method):
    response = api.call(method, path, None)
    assert_error(response, 426, "UPGRADE_REQUIRED")
    assert response.headers["upgrade"] == "websocket"
    assert "allow" not in response.headers


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/v1/agents", "GET, HEAD, POST, OPTIONS"),
        ("/v1/agents/agt_x", "GET, HEAD, DELETE, OPTIONS"),
        ("/v1/agents/agt_x/update", "POST, OPTIONS"),
        ("/v1/avatar/av_x", "GET, HEAD, DELETE, OPTIONS"),
        ("/healthz", "GET, HEAD, OPTIONS"),
        ("/r/rt_x", "GET, HEAD, OPTIONS"),
        ("/files/tsk_x/output.mp4", "GET, HEAD, OPTIONS"),
    ],
)
def test_allow_lists_every_method_of_the_path_with_head_beside_get(api, alice, path, allow):
    """The same list on a 405 and on OPTIONS (Litestar's own OPTIONS answer lists only the
    methods of one handler)."""
    refused = api.call("PATCH", path, alice)
    assert_error(refused, 405, "METHOD_NOT_ALLOWED")
    assert refused.headers["allow"] == allow
    options = api.call("OPTIONS", path, alice)
    assert (options.status_code, options.content) == (204, b"")
    assert options.headers["allow"] == allow


def _operations(api) -> list[tuple[str, str, set[str]]]:
    """(method, path with ids filled in, documented query parameters) of every operation."""
    found = []
    for template, item in api.get("/schema/openapi.json").json()["paths"].items():
        path = re.sub(r"\{[^}]+\}", "x", template)
        for method, operation in item.items():
            params = operation.get("parameters", [])
            documented = {p["name"] for p in params if p["in"] == "query"}
            found.append((method.upper(), path, documented))
    return found


def test_every_operation_refuses_query_parameters_it_does_not_declare(api, alice):
    operations = _operations(api)
    assert len(operations) > 40
    for method, path, documented in operations:
        response = api.call(method, f"{path}?limt=1&sinse=2026-01-01T00:00:00Z", alice)
        if method == "HEAD":  # GET's answer without its body
            assert response.status_code == 422, (method, path)
            continue
        error = assert_error(response, 422, "VALIDATION_ERROR")
        assert [d["field"] for d in error["details"]] == ["limt", "sinse"], (method, path)
        taken = ", ".join(sorted(documented)) or "none"
        assert error["details"][0]["message"].endswith(f"this endpoint takes: {taken}.")
        assert "limt" in error["message"] and "sinse" in error["message"]


def test_every_documented_query_parameter_is_taken(api, alice):
    """What the OpenAPI document declares is exactly what the refusal lets through."""
    for method, path, documented in _operations(api):
        for name in documented:
            response = api.call(method, path, alice, params={name: "1"})
            assert "Unknown query parameter" not in response.text, (method, path, name)


def test_a_misspelt_filter_is_refused_not_ignored(api, alice):
    assert_error(api.get("/v1/usage?sinse=2026-01-01T00:00:00Z", alice), 422, "VALIDATION_ERROR")
    assert_error(api.get("/v1/agents?limt=1", alice), 422, "VALIDATION_ERROR")
    assert api.get("/v1/agents?limit=1", alice).status_code == 200
    # Without a key the caller learns nothing, not even which parameters a path takes.
    assert_error(api.get("/v1/agents?limt=1"), 401, "UNAUTHORIZED")


def test_pages_take_any_query(api, alice):
    """A shared link may carry a tracker's or a cache-buster's parameters."""
    route = api.route(alice, api.agent(alice)["agent_id"])
    assert api.get(f"/r/{route['id']}?utm_source=mail&v=2").status_code == 200
    assert api.get("/static/pages.css?cache=1").status_code == 200


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/v1/nowhere", "/v1/agents/x/y/z", "/v1/%2F"])
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "HEAD"])
def test_every_v1_path_needs_a_key_known_or_not(api, path, method):
    response = api.call(method, path, None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    if method != "HEAD":
        assert_error(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/agent-routes/%2F/update"),
        ("POST", "/v1/agent-routes/%2f/revoke"),
        ("GET", "/v1/agent-routes/rt_a%2Fb"),
        ("GET", "/v1/agents/%2F"),
        ("POST", "/v1/agents/a%2Fb/delete"),
        ("DELETE", "/v1/agents/a%2Fb"),
        ("GET", "/v1/avatar/av_a%2Fb"),
        ("DELETE", "/v1/avatar/%2F"),
        ("GET", "/v1/interactive/session/a%2Fb/profile"),
        ("GET", "/r/rt_a%2Fb"),
    ],
)
def test_an_id_holding_an_encoded_slash_is_unknown(api, alice, method, path):
    assert_error(api.call(method, path, alice), 404, "NOT_FOUND")
    if path.startswith("/v1/"):
        assert_error(api.call(method, path, None), 401, "UNAUTHORIZED")


def test_head_works_wherever_get_does(api, alice, png_bytes):
    avatar = api.avatar(alice, png_bytes())
    agent = api.agent(alice, avatar_id=avatar["avatar_id"])
    route = api.route(alice, agent["agent_id"])
    for path, auth in [
        ("/healthz", None),
        (f"/r/{route['id']}", None),
        (f"/avatars/{avatar['avatar_id']}.png", None),
        ("/static/pages.css", None),
        ("/schema/openapi.json", None),
        (f"/v1/agents/{agent['agent_id']}", alice),
        ("/v1/agent-routes", alice),
    ]:
        got, head = api.get(path, auth), api.call("HEAD", path, auth)
        assert (head.status_code, got.status_code) == (200, 200), path
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
        assert int(head.headers["content-length"]) == len(got.content), path
    assert api.call("HEAD", "/r/rt_unknown", None).status_code == 404
    assert api.call("HEAD", "/v1/agents/agt_unknown", alice).status_code == 404


@pytest.mark.parametrize("body", [b"{", b"{'a': 1}", b"\xff\xfe", b'{"name": "x",}'])
def test_unparseable_json_is_400(api, alice, body):
    response = api.post("/v1/agents", alice, content=body)
    assert_error(response, 400, "BAD_REQUEST")


def test_json_body_over_one_mib_is_413(api, alice):
    body = b'{"name": "' + b"a" * (1024 * 1024) + b'"}'
    assert_error(api.post("/v1/agents", alice, content=body), 413, "PAYLOAD_TOO_LARGE")


def test_unknown_fields_are_rejected(api, alice):
    error = assert_error(
        api.post("/v1/agents", alice, json={"name": "a", "nmae": "b"}), 422, "VALIDATION_ERROR"
    )
    message = "Object contains unknown field `nmae`"
    assert error["details"] == [{"field": "nmae", "message": message}]


def test_non_object_body_is_422(api, alice):
    assert_error(api.post("/v1/agents", alice, json=[1, 2]), 422, "VALIDATION_ERROR")


def test_rate_limit_per_key(make_api):
    api = make_api(rate_limit=2)  # burst 4
    alice, bob = api.key("alice"), api.key("bob")
    for _ in range(4):
        assert api.get("/v1/agents", alice).status_code == 200
    response = api.get("/v1/agents", alice)
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response.headers["retry-after"]) >= 1
    assert api.get("/v1/agents", bob).status_code == 200  # buckets are per key
    api.clock.advance(0.5)  # refills one token at 2/s
    assert api.get("/v1/agents", alice).status_code == 200
    assert api.get("/v1/agents", alice).status_code == 429


def test_ids_and_timestamps(api, alice):
    agent = api.agent(alice)
    assert re.fullmatch(r"agt_[A-Za-z0-9_-]{22}", agent["agent_id"])
    assert TIMESTAMP.match(agent["created_at"])
    route = api.route(alice, agent["agent_id"])
    assert re.fullmatch(r"rt_[A-Za-z0-9_-]{22}", route["id"])


def test_healthz(api):
    response = api.get("/healthz")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "ok"
    assert "native" in data["kernels"]["available"]
    assert data["kernels"]["default"] == "native"
    assert data["kernels"]["native"]["isa"] in data["kernels"]["native"]["isas"]
    assert isinstance(data["version"], str)


def test_openapi_documents_every_endpoint_and_the_error_body(api):
    schema = api.get("/schema/openapi.json").json()
    paths = schema["paths"]
    for path in [
        "/v1/agents",
        "/v1/agents/{agent_id}",
        "/v1/agents/{agent_id}/update",
        "/v1/agents/{agent_id}/delete",
        "/v1/agents/{agent_id}/routes",
        "/v1/agent-routes",
        "/v1/agent-routes/{route_id}",
        "/v1/agent-routes/{route_id}/update",
        "/v1/agent-routes/{route_id}/revoke",
        "/v1/avatars",
        "/v1/avatars/{avatar_id}",
        "/v1/avatars/{avatar_id}/delete",
        "/v1/interactive/start_session",
        "/v1/interactive/list",
        "/v1/interactive/sessions/{session_id}",
        "/v1/interactive/stop_sessions",
        "/v1/interactive/session/{session_id}/profile",
        "/v1/avatar/list",
        "/v1/avatar/{avatar_id}",
        "/v1/usage",
        "/healthz",
        "/i/{session_id}/status",
    ]:
        assert path in paths, path
    create = paths["/v1/agents/{agent_id}/routes"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert body["additionalProperties"] is False
    assert body["properties"]["validity_seconds"]["anyOf"][0]["type"] == "integer"
    assert create["responses"]["422"]["content"]["application/json"]["schema"]["$ref"] == (
        "#/components/schemas/Error"
    )
    assert create["security"] == [{"BearerAuth": []}]
    assert "Error" in schema["components"]["schemas"]
    for submission in ("/v1/avatar/async_generate", "/v1/video/upscale"):
        operation = paths[submission]["post"]
        headers = [p["name"] for p in operation["parameters"] if p["in"] == "header"]
        assert headers == ["Idempotency-Key"], submission
        assert "503" in operation["responses"], submission


def test_openapi_declares_what_client_generators_need(api):
    schema = api.get("/schema/openapi.json").json()
    paths, components = schema["paths"], schema["components"]["schemas"]
    for path, item in paths.items():
        if "get" in item:  # HEAD wherever GET is, answering without a body
            assert all("content" not in r for r in item["head"]["responses"].values()), path
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status >= "400" and method != "head":
                    body = response["content"]["application/json"]["schema"]
                    assert body == {"$ref": "#/components/schemas/Error"}, (path, status)
    submit = paths["/v1/video/upscale"]["post"]
    [resolution] = [p for p in submit["parameters"] if p["name"] == "resolution"]
    assert resolution["required"] and resolution["schema"]["enum"] == ["1080p", "2k", "4k"]
    for path, media_type in [
        ("/files/{task_id}/output.mp4", "video/mp4"),
        ("/avatars/{file_name}", "image/png"),
    ]:
        responses = paths[path]["get"]["responses"]
        for status in ("200", "206"):
            body = responses[status]["content"][media_type]["schema"]
            assert body == {"type": "string", "format": "binary"}, (path, status)
    file_params = {
        p["name"]: p["required"] for p in paths["/files/{task_id}/output.mp4"]["get"]["parameters"]
    }
    assert file_params == {"task_id": True, "expires": True, "signature": True, "Range": False}
    [status] = [p for p in paths["/v1/agent-routes"]["get"]["parameters"] if p["name"] == "status"]
    assert status["schema"] == {
        "type": "string",
        "enum": ["active", "expired", "revoked"],
        "description": "Only the routes of this status.",
    }
    assert not status["required"]
    assert components["Route"]["properties"]["created_at"]["format"] == "date-time"
    assert {"type": "string", "format": "date-time"} in components["Session"]["properties"][
        "ready_at"
    ]["oneOf"]
    agent_body = paths["/v1/agents"]["post"]["requestBody"]["content"]["application/json"]
    arms = agent_body["schema"]["properties"]["tools"]["anyOf"]
    assert {"type": "array", "items": {"type": "object"}} in arms
