"""Usage windows, pagination and totals from the recorded usage."""

from __future__ import annotations

import pytest

from service.domain.models import UsageRecord


def record(owner_id, kind, ref, started_ms, ended_ms, billable=None, route_id=None):
    seconds = (ended_ms - started_ms) / 1000
    usage_id = f"usg_{ref}"
    billable = seconds if billable is None else billable
    return UsageRecord(
        usage_id, owner_id, kind, ref, started_ms, ended_ms, seconds, billable, route_id
    )


@pytest.fixture
def seeded(api, alice, bob):
    with api.client.portal() as portal:
        keys = {k.owner_name: k.owner_id for k in portal.call(api.ctx.store.list_keys)}
        base = 1_767_225_600_000  # 2026-01-01T00:00:00Z
        rows = [
            record(keys["alice"], "session", "s1", base, base + 10_500),
            record(keys["alice"], "route_conversation", "r1", base, base + 60_000, route_id="rt_a"),
            record(keys["alice"], "route_conversation", "r2", base, base + 90_000, route_id="rt_b"),
            record(keys["alice"], "upscale", "t1", base, base + 120_000, billable=5.0),
            record(keys["alice"], "session", "s2", base, base + 3_600_000),
            record(keys["bob"], "session", "s3", base, base + 1_000),
            record(keys["bob"], "route_conversation", "r3", base, base + 5_000, route_id="rt_c"),
        ]
        for row in rows:
            portal.call(api.ctx.store.add_usage, row)
    return rows


def test_totals_cover_the_window(api, alice, seeded):
    data = api.get("/v1/usage", alice).json()["data"]
    assert [i["ref_id"] for i in data["items"]] == ["s2", "t1", "r2", "r1", "s1"]
    assert data["totals"] == {
        "route_conversation_seconds": 150.0,
        "session_seconds": 3610.5,
        "upscale_billable_seconds": 5.0,
        "tts_seconds": 0.0,
        "stt_seconds": 0.0,
        "talking_video_seconds": 0.0,
        "motion_video_seconds": 0.0,
        "image_count": 0,
    }
    first = data["items"][-1]
    assert first == {
        "kind": "session",
        "ref_id": "s1",
        "started_at": "2026-01-01T00:00:00.000Z",
        "ended_at": "2026-01-01T00:00:10.500Z",
        "seconds": 10.5,
        "billable_seconds": 10.5,
    }


def test_window_is_half_open_on_ended_at(api, alice, seeded):
    params = {"since": "2026-01-01T00:00:10.500Z", "until": "2026-01-01T00:02:00Z"}
    data = api.get("/v1/usage", alice, params=params).json()["data"]
    assert [i["ref_id"] for i in data["items"]] == ["r2", "r1", "s1"]
    assert data["totals"]["upscale_billable_seconds"] == 0.0
    offset = {"since": "2026-01-01T01:00:00+01:00"}  # = 00:00Z
    assert len(api.get("/v1/usage", alice, params=offset).json()["data"]["items"]) == 5


def test_pagination_keeps_window_totals(api, alice, seeded):
    page = api.get("/v1/usage", alice, params={"limit": 3}).json()["data"]
    assert len(page["items"]) == 3
    assert page["totals"]["session_seconds"] == 3610.5
    rest = api.get("/v1/usage", alice, params={"limit": 3, "cursor": page["next_cursor"]}).json()
    assert [i["ref_id"] for i in rest["data"]["items"]] == ["r1", "s1"]
    assert rest["data"]["next_cursor"] is None


@pytest.mark.parametrize(
    "params",
    [
        {"since": "yesterday"},
        {"until": "2026-01-01"},
        {"since": "2026-01-01T00:00:00"},
        {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        {"since": "2026-01-01T00:00:00+99:00"},
        {"since": "2026-02-30T00:00:00Z"},
    ],
)
def test_bad_windows_are_422(api, alice, params):
    response = api.get("/v1/usage", alice, params=params)
    assert response.status_code == 422, response.text
    assert "timedelta" not in response.text  # said in the API's words, not Python's


NO_USAGE = {
    "route_conversation_seconds": 0.0,
    "session_seconds": 0.0,
    "upscale_billable_seconds": 0.0,
    "tts_seconds": 0.0,
    "stt_seconds": 0.0,
    "talking_video_seconds": 0.0,
    "motion_video_seconds": 0.0,
    "image_count": 0,
}


@pytest.mark.parametrize(
    ("params", "refs", "totals"),
    [
        ({"kind": "session"}, ["s2", "s1"], NO_USAGE | {"session_seconds": 3610.5}),
        ({"kind": "upscale"}, ["t1"], NO_USAGE | {"upscale_billable_seconds": 5.0}),
        ({"route_id": "rt_a"}, ["r1"], NO_USAGE | {"route_conversation_seconds": 60.0}),
        ({"route_id": "rt_a", "kind": "session"}, [], NO_USAGE),
        ({"route_id": "rt_c"}, [], NO_USAGE),  # bob's route: an empty report, not a 404
        ({"route_id": "rt_unknown"}, [], NO_USAGE),
        (
            {"kind": "route_conversation", "until": "2026-01-01T00:01:30Z"},
            ["r1"],
            NO_USAGE | {"route_conversation_seconds": 60.0},
        ),
    ],
)
def test_filters_select_the_items_and_the_totals(api, alice, seeded, params, refs, totals):
    data = api.get("/v1/usage", alice, params=params).json()["data"]
    assert [i["ref_id"] for i in data["items"]] == refs
    assert data["totals"] == totals


def test_route_conversations_name_their_route(api, alice, seeded):
    items = api.get("/v1/usage", alice, params={"kind": "route_conversation"}).json()["data"]
    assert [(i["ref_id"], i["route_id"]) for i in items["items"]] == [
        ("r2", "rt_b"),
        ("r1", "rt_a"),
    ]
    others = api.get("/v1/usage", alice, params={"kind": "session"}).json()["data"]["items"]
    assert all("route_id" not in item for item in others)


@pytest.mark.parametrize("kind", ["images", "Session", "", "null"])
def test_an_unknown_kind_is_422(api, alice, kind):
    response = api.get("/v1/usage", alice, params={"kind": kind})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == "kind"


def test_a_closed_route_conversation_is_billed_to_its_route(api, alice, wait_until):
    agent = api.agent(alice)
    route = api.route(alice, agent["agent_id"])
    with api.client.websocket_connect(f"/r/{route['id']}/ws") as ws:
        assert ws.receive_json()["state"] == "ready"
        # Kept and billed from the visitor's first message.
        ws.send_json({"type": "message", "text": "Hi"})
        while ws.receive_json()["type"] != "message":
            pass
        api.clock.advance(12.5)
    params = {"route_id": route["id"]}

    def billed():
        return api.get("/v1/usage", alice, params=params).json()["data"]["items"]

    wait_until(billed)
    [item] = billed()
    conversations = api.get("/v1/conversations", alice, params=params).json()["data"]["items"]
    assert item["ref_id"] == conversations[0]["conversation_id"]
    assert (item["kind"], item["route_id"], item["seconds"]) == (
        "route_conversation",
        route["id"],
        12.5,
    )
