"""Routes."""

from __future__ import annotations

import json
import socket

import pytest


@pytest.fixture
def agent(api, alice) -> dict:
    return api.agent(alice)


def test_create_permanent_route(api, alice, agent):
    response = api.post(f"/v1/agents/{agent['agent_id']}/routes", alice, json={"label": "Shop"})
    assert response.status_code == 201
    route = response.json()["data"]
    assert route["status"] == "active"
    assert route["label"] == "Shop"
    assert route["agent_id"] == agent["agent_id"]
    assert route["revoked_at"] is None
    assert "expires_at" not in route
    assert route["path"] == f"/r/{route['id']}"
    assert route["url"] == f"http://testserver.local/r/{route['id']}"
    assert route["updated_at"] == route["created_at"]
    assert route["route_version"] == 1


def test_create_with_empty_body(api, alice, agent):
    response = api.post(f"/v1/agents/{agent['agent_id']}/routes", alice)
    assert response.status_code == 201
    assert response.json()["data"]["label"] is None


def test_temporary_route_expires_without_any_job(api, alice, agent):
    route = api.route(alice, agent["agent_id"], validity_seconds=60)
    assert route["expires_at"] == "2026-01-01T00:01:00.000Z"
    assert route["created_at"] == "2026-01-01T00:00:00.000Z"
    api.clock.advance(59.999)
    assert api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]["status"] == "active"
    api.clock.advance(0.001)
    assert api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]["status"] == "expired"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"validity_seconds": 1.0}, "validity_seconds"),
        ({"validity_seconds": 1.5}, "validity_seconds"),
        ({"validity_seconds": "60"}, "validity_seconds"),
        ({"validity_seconds": True}, "validity_seconds"),
        ({"validity_seconds": 0}, "validity_seconds"),
        ({"validity_seconds": -5}, "validity_seconds"),
        ({"validity_seconds": 315_360_001}, "validity_seconds"),
        ({"validity_seconds": []}, "validity_seconds"),
        ({"label": ""}, "label"),
        ({"label": "x" * 101}, "label"),
        ({"label": 5}, "label"),
        ({"status": "active"}, "status"),
        ({"expires_at": "2030-01-01T00:00:00Z"}, "expires_at"),
    ],
)
def test_create_validation(api, alice, agent, body, field):
    response = api.post(f"/v1/agents/{agent['agent_id']}/routes", alice, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert [d["field"] for d in error["details"]] == [field]


def test_limits_count_code_points(api, alice, agent):
    label = "😀" * 100  # 100 code points, 400 UTF-8 bytes
    assert api.route(alice, agent["agent_id"], label=label)["label"] == label
    route = api.route(alice, agent["agent_id"], validity_seconds=315_360_000)
    assert route["expires_at"] == "2035-12-30T00:00:00.000Z"  # 3,650 days later


def test_unknown_or_foreign_agent_is_404(api, alice, bob, agent):
    assert api.post("/v1/agents/agt_missing/routes", alice, json={}).status_code == 404
    assert api.post(f"/v1/agents/{agent['agent_id']}/routes", bob, json={}).status_code == 404
    assert api.get(f"/v1/agents/{agent['agent_id']}/routes", bob).status_code == 404


def test_foreign_route_is_404_everywhere(api, alice, bob, agent):
    route = api.route(alice, agent["agent_id"])
    rid = route["id"]
    assert api.get(f"/v1/agent-routes/{rid}", bob).status_code == 404
    assert api.post(f"/v1/agent-routes/{rid}/revoke", bob).status_code == 404
    assert api.post(f"/v1/agent-routes/{rid}/update", bob, json={"label": "x"}).status_code == 404
    assert api.get("/v1/agent-routes", bob).json()["data"]["items"] == []
    assert api.get(f"/v1/agent-routes/{rid}", alice).json()["data"]["status"] == "active"


def test_revoke_is_idempotent_and_permanent(api, alice, agent):
    route = api.route(alice, agent["agent_id"], label="a")
    other = api.route(alice, agent["agent_id"])
    first = api.post(f"/v1/agent-routes/{route['id']}/revoke", alice)
    assert first.status_code == 200
    revoked = first.json()["data"]
    assert revoked["status"] == "revoked"
    assert revoked["revoked_at"] == "2026-01-01T00:00:00.000Z"
    api.clock.advance(10)
    again = api.post(f"/v1/agent-routes/{route['id']}/revoke", alice).json()["data"]
    assert again["status"] == "revoked"
    assert again["revoked_at"] == revoked["revoked_at"]  # the first revocation stands
    # A label update does not re-activate it; the agent and its other routes are untouched.
    updated = api.post(f"/v1/agent-routes/{route['id']}/update", alice, json={"label": "b"})
    assert updated.json()["data"]["status"] == "revoked"
    assert api.get(f"/v1/agent-routes/{other['id']}", alice).json()["data"]["status"] == "active"
    assert api.get(f"/v1/agents/{agent['agent_id']}", alice).status_code == 200


def test_revoking_an_expired_route(api, alice, agent):
    route = api.route(alice, agent["agent_id"], validity_seconds=1)
    api.clock.advance(5)
    response = api.post(f"/v1/agent-routes/{route['id']}/revoke", alice)
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "revoked"
    assert data["expires_at"] == route["expires_at"]


def test_update_label_only(api, alice, agent):
    route = api.route(alice, agent["agent_id"], label="old")
    path = f"/v1/agent-routes/{route['id']}/update"
    assert api.post(path, alice, json={"label": "new"}).json()["data"]["label"] == "new"
    assert api.post(path, alice, json={"label": None}).json()["data"]["label"] is None
    for body in ({"validity_seconds": 5}, {"label": "x", "agent_id": "agt_x"}, {}, {"label": ""}):
        response = api.post(path, alice, json=body)
        assert response.status_code == 422, body
    assert api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]["label"] is None


def test_lists_filter_and_paginate(api, alice):
    first, second = api.agent(alice, name="one"), api.agent(alice, name="two")
    permanent = api.route(alice, first["agent_id"])
    api.clock.advance(1)
    temporary = api.route(alice, first["agent_id"], validity_seconds=10)
    api.clock.advance(1)
    revoked = api.route(alice, second["agent_id"])
    api.post(f"/v1/agent-routes/{revoked['id']}/revoke", alice)
    api.clock.advance(20)  # the temporary route is now expired

    def ids(path, **params):
        response = api.get(path, alice, params=params)
        assert response.status_code == 200, response.text
        return [r["id"] for r in response.json()["data"]["items"]]

    assert ids("/v1/agent-routes") == [revoked["id"], temporary["id"], permanent["id"]]
    assert ids("/v1/agent-routes", status="active") == [permanent["id"]]
    assert ids("/v1/agent-routes", status="expired") == [temporary["id"]]
    assert ids("/v1/agent-routes", status="revoked") == [revoked["id"]]
    assert ids("/v1/agent-routes", agent_id=second["agent_id"]) == [revoked["id"]]
    agent_path = f"/v1/agents/{first['agent_id']}/routes"
    assert ids(agent_path) == [temporary["id"], permanent["id"]]
    assert ids(agent_path, status="expired") == [temporary["id"]]

    page = api.get("/v1/agent-routes", alice, params={"limit": 2}).json()["data"]
    assert [r["id"] for r in page["items"]] == [revoked["id"], temporary["id"]]
    rest = api.get("/v1/agent-routes", alice, params={"cursor": page["next_cursor"]}).json()
    assert [r["id"] for r in rest["data"]["items"]] == [permanent["id"]]
    assert rest["data"]["next_cursor"] is None


@pytest.mark.parametrize(
    "params",
    [{"status": "gone"}, {"limit": 0}, {"limit": 201}, {"limit": "ten"}, {"cursor": "!!"}],
)
def test_list_parameters_are_validated(api, alice, params):
    response = api.get("/v1/agent-routes", alice, params=params)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_links_use_the_configured_interactive_url(make_api):
    api = make_api(interactive_url="https://talk.example.com")
    alice = api.key()
    route = api.route(alice, api.agent(alice)["agent_id"])
    assert route["url"] == f"https://talk.example.com/r/{route['id']}"


def test_links_follow_the_request_host(api, alice, agent):
    response = api.client.post(
        f"/v1/agents/{agent['agent_id']}/routes",
        json={},
        headers={**alice, "Host": "avatars.internal:9000"},
    )
    route = response.json()["data"]
    assert route["url"] == f"http://avatars.internal:9000/r/{route['id']}"


@pytest.mark.parametrize(
    ("server", "authority"),
    [(("0.0.0.0", 8000), f"{socket.gethostname()}:8000"), (("::1", 8000), "[::1]:8000")],
    ids=["wildcard", "ipv6"],
)
def test_without_a_host_header_links_name_the_address(api, alice, agent, server, authority):
    """An HTTP/1.0 request may come without Host: links then name the address it came in on,
    never a wildcard address, and an IPv6 one in brackets."""
    route = api.route(alice, agent["agent_id"])
    path = f"/v1/agent-routes/{route['id']}"
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.0", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "server": server, "client": ("127.0.0.1", 40000),
        "headers": [(b"authorization", alice["Authorization"].encode())],
    }  # fmt: skip
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    with api.client.portal() as portal:
        portal.call(api.client.app, scope, receive, send)
    assert sent[0]["status"] == 200
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body["data"]["url"] == f"http://{authority}/r/{route['id']}"


def test_every_change_is_counted_and_dated(api, alice, agent):
    route = api.route(alice, agent["agent_id"], label="a", validity_seconds=600)
    rid, created = route["id"], route["created_at"]

    def change(action: str, **body) -> dict:
        api.clock.advance(10)
        response = api.post(f"/v1/agent-routes/{rid}/{action}", alice, json=body or None)
        assert response.status_code == 200, response.text
        return response.json()["data"]

    assert (change("update", label="a")["route_version"], route["updated_at"]) == (1, created)
    relabeled = change("update", label="b")
    assert relabeled["route_version"] == 2
    assert relabeled["updated_at"] == "2026-01-01T00:00:20.000Z"
    revoked = change("revoke")
    assert revoked["route_version"] == 3
    assert revoked["revoked_at"] == revoked["updated_at"] == "2026-01-01T00:00:30.000Z"
    assert change("revoke")["route_version"] == 3  # already revoked: no change
    cleared = change("update", label=None)
    assert cleared["route_version"] == 4
    assert cleared["revoked_at"] == revoked["revoked_at"] < cleared["updated_at"]
    assert api.get(f"/v1/agent-routes/{rid}", alice).json()["data"] == cleared


def test_deleting_the_agent_counts_as_the_revoke(api, alice, agent):
    route = api.route(alice, agent["agent_id"])
    api.clock.advance(5)
    api.post(f"/v1/agents/{agent['agent_id']}/delete", alice)
    revoked = api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]
    assert revoked["route_version"] == 2
    assert revoked["revoked_at"] == revoked["updated_at"] == "2026-01-01T00:00:05.000Z"
