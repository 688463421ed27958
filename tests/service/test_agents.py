"""Agents."""

from __future__ import annotations

import pytest


def test_create_get_list(api, alice):
    avatar = api.avatar(alice)
    body = {
        "name": "Ada",
        "avatar_id": avatar["avatar_id"],
        "voice_id": "espeak-en-us",
        "instruction": "Be brief.",
        "llm_model": "llama3",
        "greeting": "Hello!",
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    response = api.post("/v1/agents", alice, json=body)
    assert response.status_code == 201
    agent = response.json()["data"]
    assert {k: agent[k] for k in body} == body
    assert agent["model"] == "metis-2.5"
    assert agent["created_at"] == agent["updated_at"]
    assert api.get(f"/v1/agents/{agent['agent_id']}", alice).json()["data"] == agent
    items = api.get("/v1/agents", alice).json()["data"]["items"]
    assert [a["agent_id"] for a in items] == [agent["agent_id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": 3}, "name"),
        ({"name": "a", "instruction": "x" * 20_001}, "instruction"),
        ({"name": "a", "greeting": "x" * 1_001}, "greeting"),
        ({"name": "a", "tools": "search"}, "tools"),
        ({"name": "a", "tools": {"blob": "x" * 70_000}}, "tools"),
        ({"name": "a", "model": "metis-1"}, "model"),
        ({"name": "a", "avatar_id": "av_missing"}, "avatar_id"),
        ({"name": "a", "agent_id": "agt_mine"}, "agent_id"),
    ],
)
def test_create_validation(api, alice, body, field):
    response = api.post("/v1/agents", alice, json=body)
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["error"]["details"]] == [field]


def test_avatar_of_another_owner_is_refused(api, alice, bob):
    foreign = api.avatar(bob)
    response = api.post("/v1/agents", alice, json={"name": "a", "avatar_id": foreign["avatar_id"]})
    assert response.status_code == 422


def test_partial_update(api, alice):
    agent = api.agent(alice, greeting="Hi", voice_id="espeak-en-us")
    api.clock.advance(3)
    path = f"/v1/agents/{agent['agent_id']}/update"
    response = api.post(path, alice, json={"name": "Bea", "greeting": None})
    assert response.status_code == 200
    updated = response.json()["data"]
    assert updated["name"] == "Bea"
    assert updated["greeting"] is None
    assert updated["voice_id"] == "espeak-en-us"
    assert updated["updated_at"] == "2026-01-01T00:00:03.000Z"
    assert updated["created_at"] == agent["created_at"]
    for body in ({"name": None}, {"model": "other"}, {"agent_id": "x"}, {"tools": 5}):
        assert api.post(path, alice, json=body).status_code == 422, body


def test_foreign_agent_is_404(api, alice, bob):
    agent = api.agent(alice)
    aid = agent["agent_id"]
    assert api.get(f"/v1/agents/{aid}", bob).status_code == 404
    assert api.post(f"/v1/agents/{aid}/update", bob, json={"name": "x"}).status_code == 404
    assert api.post(f"/v1/agents/{aid}/delete", bob).status_code == 404
    assert api.get("/v1/agents", bob).json()["data"]["items"] == []


def test_delete_revokes_routes_which_stay_readable(api, alice):
    agent = api.agent(alice)
    aid = agent["agent_id"]
    routes = [api.route(alice, aid), api.route(alice, aid, validity_seconds=100)]
    response = api.post(f"/v1/agents/{aid}/delete", alice)
    assert response.status_code == 200
    assert response.json()["data"] == agent
    assert api.get(f"/v1/agents/{aid}", alice).status_code == 404
    assert api.post(f"/v1/agents/{aid}/delete", alice).status_code == 404
    assert api.post(f"/v1/agents/{aid}/routes", alice, json={}).status_code == 404
    for route in routes:
        data = api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]
        assert data["status"] == "revoked"
    listed = api.get("/v1/agent-routes", alice, params={"agent_id": aid}).json()["data"]["items"]
    assert len(listed) == 2


def test_agents_paginate(api, alice):
    created = []
    for index in range(5):
        created.append(api.agent(alice, name=f"agent {index}")["agent_id"])
        api.clock.advance(1)
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/agents", alice, params=params).json()["data"]
        seen += [a["agent_id"] for a in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == created[::-1]


def test_custom_agent_fields_and_write_only_token(api, alice):
    body = {
        "name": "Own",
        "description": "Answers from our own service.",
        "runtime_kind": "custom_agent",
        "custom_agent_url": "https://agent.example.com/chat",
        "custom_agent_protocol": "vercel_ai_sdk",
        "custom_agent_bearer_token": "s3cret",
    }
    agent = api.post("/v1/agents", alice, json=body).json()["data"]
    assert agent["runtime_kind"] == "custom_agent" and agent["description"] == body["description"]
    assert agent["custom_agent_protocol"] == "vercel_ai_sdk"
    assert agent["has_custom_agent_bearer_token"] is True
    assert "s3cret" not in str(api.get(f"/v1/agents/{agent['agent_id']}", alice).json())
    path = f"/v1/agents/{agent['agent_id']}/update"
    cleared = api.post(path, alice, json={"custom_agent_bearer_token": None}).json()["data"]
    assert cleared["has_custom_agent_bearer_token"] is False
    plain = api.agent(alice)
    assert plain["runtime_kind"] == "managed_agent" and plain["description"] is None


CUSTOM = {"runtime_kind": "custom_agent"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**CUSTOM, "custom_agent_protocol": "openai_chat"}, "custom_agent_url"),
        ({**CUSTOM, "custom_agent_url": "https://a.example"}, "custom_agent_protocol"),
        ({**CUSTOM, "custom_agent_url": "http://a.example",
          "custom_agent_protocol": "openai_chat"}, "custom_agent_url"),
        ({"runtime_kind": "remote"}, "runtime_kind"),
        ({"custom_agent_protocol": "grpc"}, "custom_agent_protocol"),
        ({"description": "d" * 1001}, "description"),
    ],
)  # fmt: skip
def test_custom_agent_validation(api, alice, body, field):
    response = api.post("/v1/agents", alice, json={"name": "a", **body})
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["error"]["details"]] == [field]


def test_hosted_names_and_spelling(api, alice):
    """The hosted API's names (`id`, `user_id`, `voice_profile_id`) follow ours, and its
    spelling of the voice is accepted in bodies."""
    agent = api.agent(alice, voice_profile_id="espeak-en-us", tools=[])
    assert agent["id"] == agent["agent_id"]
    assert agent["voice_profile_id"] == agent["voice_id"] == "espeak-en-us"
    assert agent["user_id"].startswith("own_")
    path = f"/v1/agents/{agent['agent_id']}/update"
    updated = api.post(path, alice, json={"voice_profile_id": "espeak-de"}).json()["data"]
    assert updated["voice_id"] == updated["voice_profile_id"] == "espeak-de"
    cleared = api.post(path, alice, json={"voice_profile_id": None}).json()["data"]
    assert cleared["voice_id"] is None
    same = api.post(path, alice, json={"voice_id": "espeak-es", "voice_profile_id": "espeak-es"})
    assert same.json()["data"]["voice_id"] == "espeak-es"
    for body in (
        {"voice_id": "a", "voice_profile_id": "b"},
        {"voice_id": None, "voice_profile_id": "b"},
    ):
        response = api.post(path, alice, json=body)
        assert response.status_code == 422, body
        assert {d["field"] for d in response.json()["error"]["details"]} == set(body)
    conflict = api.post(
        "/v1/agents", alice, json={"name": "A", "voice_id": "a", "voice_profile_id": "b"}
    )
    assert conflict.status_code == 422


def test_delete_method_is_the_same_delete(api, alice, bob):
    agent = api.agent(alice)
    route = api.route(alice, agent["agent_id"])
    assert api.call("DELETE", f"/v1/agents/{agent['agent_id']}", bob).status_code == 404
    deleted = api.call("DELETE", f"/v1/agents/{agent['agent_id']}", alice)
    assert deleted.status_code == 200
    assert deleted.json()["data"]["agent_id"] == agent["agent_id"]
    assert api.get(f"/v1/agents/{agent['agent_id']}", alice).status_code == 404
    assert api.get(f"/v1/agent-routes/{route['id']}", alice).json()["data"]["status"] == "revoked"
    assert api.call("DELETE", f"/v1/agents/{agent['agent_id']}", alice).status_code == 404
