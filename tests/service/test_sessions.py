"""Interactive sessions, and their usage records."""

from __future__ import annotations

import pytest

from service.domain.files import avatar_key
from service.domain.sessions import sweep


@pytest.fixture
def avatar_id(api, alice) -> str:
    return api.avatar(alice)["avatar_id"]


def start(api, auth, **body):
    return api.post("/v1/interactive/start_session", auth, json=body)


def session_of(api, auth, session_id) -> dict:
    response = api.get(f"/v1/interactive/sessions/{session_id}", auth)
    assert response.status_code == 200, response.text
    return response.json()["data"]["session"]


def test_start_is_immediate_then_ready_after_preparation(api, alice, avatar_id, wait_until):
    response = start(
        api, alice, avatar_id=avatar_id, voice_profile_id="espeak-en-us", instructions="Hi"
    )
    assert response.status_code == 200
    session = response.json()["data"]["session"]
    sid = session["session_id"]
    assert sid.startswith("ses_")
    assert session["status"] == "starting"
    assert session["model"] == "metis-2.5"
    assert session["voice_id"] == "espeak-en-us"
    assert session["client_url"] == f"http://testserver.local/i/{sid}"
    assert session["ready_at"] is None and session["stopped_at"] is None
    wait_until(lambda: session_of(api, alice, sid)["status"] == "ready")
    assert session_of(api, alice, sid)["ready_at"] == session["created_at"]


def test_warm_up_is_derived_from_stored_times(make_api, wait_until):
    api = make_api(session_warmup_s=120)
    alice = api.key()
    avatar_id = api.avatar(alice)["avatar_id"]
    sid = start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"]
    status = api.get(f"/i/{sid}/status")
    assert status.json()["data"] == {"session_id": sid, "status": "starting"}
    assert status.headers["referrer-policy"] == "no-referrer"
    # Preparation finishes at once, but the session stays starting through the warm-up.
    wait_until(lambda: _ready_ms(api, sid) is not None)
    api.clock.advance(119.999)
    assert session_of(api, alice, sid)["status"] == "starting"
    api.clock.advance(0.001)
    session = session_of(api, alice, sid)
    assert session["status"] == "ready"
    assert session["ready_at"] == "2026-01-01T00:02:00.000Z"
    assert api.get(f"/i/{sid}/status").json()["data"]["status"] == "ready"


def _ready_ms(api, sid):
    with api.client.portal() as portal:
        return portal.call(api.ctx.store.get_session, sid).ready_ms


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"voice_id": "a", "voice_profile_id": "b"}, {"voice_id", "voice_profile_id"}),
        ({"instruction": "a", "instructions": "b"}, {"instruction", "instructions"}),
        ({"model": "metis-9"}, {"model"}),
        ({"tools": 3}, {"tools"}),
        ({"session": 1}, {"session"}),
        ({"instruction": "x" * 20_001}, {"instruction"}),
    ],
)
def test_start_validation(api, alice, avatar_id, body, fields):
    response = start(api, alice, avatar_id=avatar_id, **body)
    assert response.status_code == 422, response.text
    assert {d["field"] for d in response.json()["error"]["details"]} == fields


def test_unknown_model_lists_the_known_ones(make_api):
    api = make_api(models=("metis-2.5", "metis-3"))
    alice = api.key()
    avatar_id = api.avatar(alice)["avatar_id"]
    response = start(api, alice, avatar_id=avatar_id, model="nope")
    assert "metis-2.5, metis-3" in response.json()["error"]["message"]
    ok = start(api, alice, avatar_id=avatar_id, model="metis-3")
    assert ok.json()["data"]["session"]["model"] == "metis-3"


def test_same_value_under_both_spellings_is_accepted(api, alice, avatar_id):
    response = start(
        api, alice, avatar_id=avatar_id, voice_id="espeak-fr", voice_profile_id="espeak-fr"
    )
    assert response.status_code == 200


def test_avatar_must_exist_and_be_the_callers(api, alice, bob, avatar_id):
    assert start(api, alice).status_code == 422  # missing
    assert start(api, alice, avatar_id="av_missing").status_code == 422
    assert start(api, bob, avatar_id=avatar_id).status_code == 422


def test_start_needs_a_key(api, avatar_id):
    assert start(api, None, avatar_id=avatar_id).status_code == 401


def test_stop_several_and_list(api, alice, bob, avatar_id, wait_until):
    ids = [
        start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"]
        for _ in range(3)
    ]
    listed = api.get("/v1/interactive/list", alice).json()["data"]
    assert {s["session_id"] for s in listed} == set(ids)
    assert api.get("/v1/interactive/list", bob).json()["data"] == []
    assert api.get(f"/v1/interactive/sessions/{ids[0]}", bob).status_code == 404
    api.clock.advance(30)
    body = {"session_ids": [ids[0], ids[1]]}
    first = api.post("/v1/interactive/stop_sessions", alice, json=body).json()["data"]
    assert first == {
        "stopped": ids[:2],
        "already_stopped": [],
        "not_found": [],
        "stopped_sessions": ids[:2],  # the hosted API's name
    }
    body = {"session_ids": [ids[0], "ses_nope", ids[2]]}
    second = api.post("/v1/interactive/stop_sessions", bob, json=body).json()["data"]
    assert second["stopped"] == second["stopped_sessions"] == []
    assert second["not_found"] == body["session_ids"]
    third = api.post("/v1/interactive/stop_sessions", alice, json=body).json()["data"]
    assert third["stopped"] == third["stopped_sessions"] == [ids[2]]
    assert third["already_stopped"] == [ids[0]] and third["not_found"] == ["ses_nope"]
    stopped = session_of(api, alice, ids[0])
    assert stopped["status"] == "stopped"
    assert stopped["stop_reason"] == "api"
    assert stopped["stopped_at"] == "2026-01-01T00:00:30.000Z"
    assert api.get("/v1/interactive/list", alice).json()["data"] == []
    assert api.get(f"/i/{ids[0]}/status").json()["data"]["status"] == "stopped"
    usage = api.get("/v1/usage", alice).json()["data"]
    assert sorted(i["ref_id"] for i in usage["items"]) == sorted(ids)
    assert all(i["seconds"] == 30.0 and i["kind"] == "session" for i in usage["items"])
    assert usage["totals"]["session_seconds"] == 90.0


def test_list_is_a_bare_array_of_open_sessions_newest_first(api, alice, avatar_id):
    ids = []
    for _ in range(3):
        ids.append(start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"])
        api.clock.advance(1)
    api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [ids[1]]})
    listed = api.get("/v1/interactive/list", alice).json()["data"]
    assert [s["session_id"] for s in listed] == [ids[2], ids[0]]
    # No paging, so no `limit` either: a query parameter the list does not take is refused.
    assert api.get("/v1/interactive/list", alice, params={"limit": 1}).status_code == 422


@pytest.mark.parametrize("ids", [[], ["x"] * 101, "ses_1", [1]])
def test_stop_validation(api, alice, ids):
    response = api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": ids})
    assert response.status_code == 422


def test_max_duration_stops_sessions_and_the_sweeper_records_usage(make_api):
    api = make_api(session_max_s=600)
    alice = api.key()
    avatar_id = api.avatar(alice)["avatar_id"]
    sid = start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"]
    api.clock.advance(600)
    session = session_of(api, alice, sid)  # derived at read time, before any sweep
    assert session["status"] == "stopped"
    assert session["stop_reason"] == "max_duration"
    assert session["stopped_at"] == "2026-01-01T00:10:00.000Z"
    assert api.get("/v1/interactive/list", alice).json()["data"] == []
    assert api.get("/v1/usage", alice).json()["data"]["items"] == []
    with api.client.portal() as portal:
        assert portal.call(sweep, api.ctx) == 1
        assert portal.call(sweep, api.ctx) == 0
    usage = api.get("/v1/usage", alice).json()["data"]
    assert [(i["ref_id"], i["seconds"]) for i in usage["items"]] == [(sid, 600.0)]
    stop = api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [sid]})
    assert stop.json()["data"]["already_stopped"] == [sid]


def test_stop_of_a_timed_out_unswept_session_bills_the_maximum(make_api):
    api = make_api(session_max_s=60)
    alice = api.key()
    avatar_id = api.avatar(alice)["avatar_id"]
    sid = start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"]
    api.clock.advance(100)
    stop = api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [sid]})
    assert stop.json()["data"]["already_stopped"] == [sid]
    assert session_of(api, alice, sid)["stop_reason"] == "max_duration"
    assert api.get("/v1/usage", alice).json()["data"]["totals"]["session_seconds"] == 60.0


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_session_whose_avatar_cannot_load_stops_with_error(api, alice, wait_until, damage):
    avatar_id = api.avatar(alice)["avatar_id"]
    files, key = api.ctx.files, avatar_key(avatar_id)

    async def spoil() -> None:
        if damage == "missing":
            await files.delete(key)
        else:
            await files.put(key, b"".join([chunk async for chunk in files.read(key, 0, 20)]))

    with api.client.portal() as portal:
        portal.call(spoil)
    sid = start(api, alice, avatar_id=avatar_id).json()["data"]["session"]["session_id"]
    wait_until(lambda: session_of(api, alice, sid)["status"] == "stopped")
    assert session_of(api, alice, sid)["stop_reason"] == "error"
    assert api.get("/v1/usage", alice).json()["data"]["items"][0]["ref_id"] == sid


def test_public_status_of_unknown_session(api):
    response = api.get("/i/ses_nope/status")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_sweep_prepares_sessions_whose_worker_died(api, alice, avatar_id):
    from service.domain.models import Session

    with api.client.portal() as portal:
        owner_id = portal.call(api.ctx.store.list_keys)[0].owner_id
        now = api.clock.now_ms()
        orphan = Session("ses_orphan", owner_id, avatar_id, "metis-2.5", now, now + 3_600_000)
        portal.call(api.ctx.store.add_session, orphan)
        assert portal.call(sweep, api.ctx) == 0  # too recent: its worker may still prepare it
        api.clock.advance(31)
        assert portal.call(sweep, api.ctx) == 1
    session = session_of(api, alice, "ses_orphan")
    assert session["status"] == "ready"
    assert session["ready_at"] == "2026-01-01T00:00:31.000Z"


def _owner_id(api) -> str:
    with api.client.portal() as portal:
        return portal.call(api.ctx.store.list_keys)[0].owner_id


def test_hosted_names_are_views_of_ours(api, alice):
    avatar_id = api.avatar(alice, name="Ada")["avatar_id"]
    started = start(api, alice, avatar_id=avatar_id, idle_timeout=30).json()["data"]
    session = started["session"]
    assert session["state"] == session["status"] == "starting"
    assert session["start_time"] == session["created_at"]
    assert session["metis_model"] == session["model"] == "metis-2.5"
    assert session["avatar"] == {"id": avatar_id, "name": "Ada"}
    assert session["user_id"] == _owner_id(api)
    assert session["idle_timeout"] == 30
    sid = session["session_id"]
    api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [sid]})
    stopped = session_of(api, alice, sid)
    assert stopped["state"] == stopped["status"] == "stopped"
    # An avatar without a name (or deleted) still gives a string: the hosted type requires one.
    unnamed = api.avatar(alice)["avatar_id"]
    session = start(api, alice, avatar_id=unnamed).json()["data"]["session"]
    assert session["avatar"] == {"id": unnamed, "name": ""}


def test_profile_gives_the_token_and_the_avatar(api, alice, bob):
    avatar_id = api.avatar(alice, name="Ada")["avatar_id"]
    started = start(api, alice, avatar_id=avatar_id).json()["data"]
    sid = started["session"]["session_id"]
    profile = api.get(f"/v1/interactive/session/{sid}/profile", alice)
    assert profile.status_code == 200
    assert profile.json()["data"] == {
        "session_id": sid,
        "session_token": started["session_token"],
        "avatar": {
            "id": avatar_id,
            "name": "Ada",
            "image": f"http://testserver.local/avatars/{avatar_id}.png",
            "supported_interactive_models": ["metis-2.5"],
        },
    }
    assert api.get(f"/v1/interactive/session/{sid}/profile", bob).status_code == 404
    assert api.get("/v1/interactive/session/ses_nope/profile", alice).status_code == 404
    assert api.get(f"/v1/interactive/session/{sid}/profile").status_code == 401
    api.post(f"/v1/avatars/{avatar_id}/delete", alice)
    gone = api.get(f"/v1/interactive/session/{sid}/profile", alice).json()["data"]
    assert gone["avatar"]["name"] == "" and gone["avatar"]["id"] == avatar_id
