"""The video upscale API through the test client: submission and its synchronous checks, the
status view, lists, cancel, idempotency and the queue limit. The app has no task worker, so
submitted tasks wait until a test runs one in-process (`run_next`), under the test's clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from service.domain import task_runs as runs
from service.domain.kinds import task_kinds
from service.workers.webhook_bodies import webhook_body

UPSCALE = "/v1/video/upscale"


def files(data: bytes, name: str = "clip.mp4") -> dict:
    return {"file": (name, data, "video/mp4")}


def submit(api, auth, video: bytes, resolution: str | None = "1080p", headers=None, **kwargs):
    query = "" if resolution is None else f"?resolution={resolution}"
    return api.post(UPSCALE + query, auth | (headers or {}), files=files(video), **kwargs)


def submitted(api, auth, video: bytes, resolution: str = "1080p", **kwargs) -> dict:
    response = submit(api, auth, video, resolution, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def uploads(api) -> list[str]:
    """The name of every upload in the file store, partial ones (a dot file in the data dir,
    an unfinished multipart upload on S3) included."""
    with api.client.portal() as portal:
        keys = portal.call(api.ctx.files.stale, "uploads/", 2**62)
    return sorted(key.rpartition("/")[2] for key in keys)


def run_next(api) -> None:
    """Run the oldest waiting task to its end in this process, as a task worker would."""

    async def run() -> None:
        ctx = api.ctx
        task = await runs.claim(ctx, "wrk_test")
        kind = task_kinds()[task.kind]
        output = await asyncio.to_thread(kind.run, runs.Job(task, ctx.settings, ctx.files))
        assert await runs.complete(ctx, task, kind, output)

    with api.client.portal() as portal:
        portal.call(run)


def test_submission_answers_200_with_the_task_and_its_status_url(api, alice, mp4_bytes):
    data = submitted(api, alice, mp4_bytes())
    assert data["task_id"].startswith("tsk_") and data["status"] == "IN_QUEUE"
    assert data["status_url"] == f"http://testserver.local{UPSCALE}/{data['task_id']}"

    view = api.get(f"{UPSCALE}/{data['task_id']}", alice).json()["data"]
    assert view == {
        "task_id": data["task_id"],
        "kind": "upscale",
        "status": "IN_QUEUE",
        "stage": "queued",
        "progress": 0.0,
        "resolution": "1080p",
        "filter": "lanczos3",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "started_at": None,
        "finished_at": None,
        "completed_at": None,
        "status_url": data["status_url"],
        "queue_position": 1,
        "input": {
            "width": 160, "height": 90, "duration": pytest.approx(1 / 3), "frame_rate": 30.0,
            "frame_rate_fraction": "30/1", "frames": 10, "has_audio": False,
            "size_bytes": len(mp4_bytes()),
        },
    }  # fmt: skip


def test_links_use_the_public_url_when_set(make_api, mp4_bytes):
    api = make_api(public_url="https://media.example.com/base")
    data = submitted(api, api.key(), mp4_bytes())
    assert data["status_url"] == f"https://media.example.com/base{UPSCALE}/{data['task_id']}"


def test_queue_position_counts_from_the_next_task(api, alice, mp4_bytes):
    ids = []
    for _ in range(3):
        ids.append(submitted(api, alice, mp4_bytes())["task_id"])
        api.clock.advance(0.001)  # the queue's order is its submission times'
    positions = [api.get(f"{UPSCALE}/{i}", alice).json()["data"]["queue_position"] for i in ids]
    assert positions == [1, 2, 3]
    api.post(f"{UPSCALE}/{ids[0]}/cancel", alice)
    assert "queue_position" not in api.get(f"{UPSCALE}/{ids[0]}", alice).json()["data"]
    assert api.get(f"{UPSCALE}/{ids[2]}", alice).json()["data"]["queue_position"] == 2


def test_list_is_newest_first_and_paginates(api, alice, bob, mp4_bytes):
    ids = []
    for _ in range(3):
        ids.append(submitted(api, alice, mp4_bytes())["task_id"])
        api.clock.advance(1)
    first = api.get(UPSCALE, alice, params={"limit": 2}).json()["data"]
    assert [t["task_id"] for t in first["items"]] == ids[:0:-1]
    assert first["items"][0]["queue_position"] == 3
    rest = api.get(UPSCALE, alice, params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [t["task_id"] for t in rest["data"]["items"]] == ids[:1]
    assert rest["data"]["next_cursor"] is None
    assert api.get(UPSCALE, bob).json()["data"] == {"items": [], "next_cursor": None}


def test_another_owners_task_is_not_found(api, alice, bob, mp4_bytes):
    task_id = submitted(api, alice, mp4_bytes())["task_id"]
    for method, path in [
        ("GET", f"{UPSCALE}/{task_id}"),
        ("POST", f"{UPSCALE}/{task_id}/cancel"),
        ("POST", f"{UPSCALE}/{task_id}/delete"),
    ]:
        response = api.call(method, path, bob)
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "NOT_FOUND"
    assert api.get(f"{UPSCALE}/{task_id}", alice).json()["data"]["status"] == "IN_QUEUE"


LONG_URL = "https://example.com/" + "a" * 981  # 1,001 bytes


@pytest.mark.parametrize(
    ("resolution", "fields", "field"),
    [
        (None, {}, "resolution"),
        ("8k", {}, "resolution"),
        ("8k", {"webhook_token": "t"}, "resolution"),  # the resolution is checked first
        ("2k", {"webhook_token": "t"}, "webhook_token"),
        ("2k", {"webhook_url": "https://x.example/h", "webhook_token": "t" * 513}, "webhook_token"),
        ("2k", {"webhook_url": LONG_URL}, "webhook_url"),
        ("2k", {"webhook_url": "http://example.com/h"}, "webhook_url"),
        ("2k", {"webhook_url": "ftp://example.com/h"}, "webhook_url"),
        ("2k", {"webhook_url": "https://example.com/h", "other": "x"}, "other"),
        ("2k", {"filter": "nearest"}, "filter"),
        ("2k", {"filter": ""}, "filter"),
    ],
    ids=["missing-resolution", "bad-resolution", "resolution-first", "token-without-url",
         "long-token", "long-url", "http-url", "ftp-url", "unknown-part", "bad-filter",
         "empty-filter"],
)  # fmt: skip
def test_synchronous_checks_name_the_field(api, alice, mp4_bytes, resolution, fields, field):
    response = submit(api, alice, mp4_bytes(), resolution, data=fields)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert [d["field"] for d in error["details"]] == [field]
    assert uploads(api) == []
    assert api.get(UPSCALE, alice).json()["data"]["items"] == []


def test_a_long_token_is_fine_up_to_512_bytes(api, alice, mp4_bytes):
    fields = {"webhook_url": "https://example.com/h", "webhook_token": "t" * 512}
    assert submit(api, alice, mp4_bytes(), data=fields).status_code == 200


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b'{"file": "x"}', "application/json", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (b"file=x", "application/x-www-form-urlencoded", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (b"--b\r\nContent-Disposition: form-data; name=file\r\n\r\nabc", None, 400, "BAD_REQUEST"),
        (b"no boundary here", None, 400, "BAD_REQUEST"),
        (b"x", "multipart/form-data", 400, "BAD_REQUEST"),
        (b"--b--\r\n", None, 422, "VALIDATION_ERROR"),
    ],
    ids=["json", "urlencoded", "truncated", "no-delimiter", "no-boundary", "no-file"],
)  # fmt: skip
def test_bodies_that_are_not_an_upload(api, alice, content, content_type, status, code):
    headers = alice | {"Content-Type": content_type or "multipart/form-data; boundary=b"}
    response = api.client.post(f"{UPSCALE}?resolution=4k", content=content, headers=headers)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    if code == "VALIDATION_ERROR":
        assert response.json()["error"]["details"] == [
            {"field": "file", "message": "is required: the video, as a multipart file part"}
        ]
    assert uploads(api) == []


def test_the_resolution_is_checked_before_the_body_is_read(api, alice):
    headers = alice | {"Content-Type": "multipart/form-data; boundary=b"}
    response = api.client.post(f"{UPSCALE}?resolution=720p", content=b"garbage", headers=headers)
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "resolution"


def test_invalid_video_names_the_limit(api, alice, mp4_bytes):
    response = submit(api, alice, mp4_bytes(rate=61, frames=3))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_VIDEO"
    assert error["details"] == {"limit": "frame_rate", "actual": 61.0, "allowed": 60}
    garbage = submit(api, alice, b"not a video at all").json()["error"]
    assert (garbage["code"], garbage["details"]["limit"]) == ("INVALID_VIDEO", "container")
    assert uploads(api) == []


def test_a_video_already_at_the_size_is_target_not_larger(api, alice, mp4_bytes):
    response = submit(api, alice, mp4_bytes(2000, 64, frames=1))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "TARGET_NOT_LARGER"
    assert uploads(api) == []


def test_an_upload_over_the_limit_is_413_and_leaves_nothing(make_api, mp4_bytes):
    limit = len(mp4_bytes())
    api = make_api(max_upload_bytes=limit)
    auth = api.key()
    response = submit(api, auth, b"\0" * (limit + 1))
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert uploads(api) == []
    assert submit(api, auth, mp4_bytes()).status_code == 200  # at the limit: taken


def test_a_bad_webhook_sent_before_the_file_is_refused_before_the_file_is_read(make_api):
    api = make_api(max_upload_bytes=5_000)
    auth = api.key()
    body = {"webhook_url": "http://example.com/h"}
    # The URL came first: refused when the file begins, so its size never matters.
    first = api.post(f"{UPSCALE}?resolution=2k", auth, data=body, files=files(b"\0" * 9_000))
    assert first.status_code == 422, first.text
    # (httpx sends the text fields before the files, so send the URL last by hand.)
    boundary = "bnd"
    late = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n"
        "\r\n" + "x" * 9_000 + f"\r\n--{boundary}\r\nContent-Disposition: form-data; "
        f"name=\"webhook_url\"\r\n\r\nhttp://example.com/h\r\n--{boundary}--\r\n"
    ).encode()  # fmt: skip
    headers = auth | {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    second = api.client.post(f"{UPSCALE}?resolution=2k", content=late, headers=headers)
    assert second.status_code == 413, second.text
    assert uploads(api) == []


@pytest.mark.parametrize(
    ("late", "status", "token"),
    [("tok", 200, "tok"), ("x" * 513, 422, None)],
    ids=["kept", "judged"],
)
def test_a_webhook_token_sent_after_the_file_counts(api, alice, mp4_bytes, late, status, token):
    """The URL before the file is judged when the file begins; a token after the file is
    still taken (and judged) when the upload is accepted."""
    parts = [
        ("webhook_url", (None, "https://example.com/h")),
        ("file", ("clip.mp4", mp4_bytes(), "video/mp4")),
        ("webhook_token", (None, late)),
    ]
    response = api.post(f"{UPSCALE}?resolution=2k", alice, files=parts)
    assert response.status_code == status, response.text
    if status == 200:
        task_id = response.json()["data"]["task_id"]
        with api.client.portal() as portal:
            task = portal.call(api.ctx.store.get_task, task_id)
        assert (task.webhook.url, task.webhook.token) == ("https://example.com/h", token)
    else:
        assert response.json()["error"]["details"][0]["field"] == "webhook_token"
        assert uploads(api) == []


def test_a_text_part_is_bounded(api, alice, mp4_bytes):
    fields = {"webhook_url": "https://example.com/" + "a" * 10_000}
    response = submit(api, alice, mp4_bytes(), data=fields)
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "webhook_url"


def test_a_part_given_twice_is_refused(api, alice, mp4_bytes):
    response = api.post(
        f"{UPSCALE}?resolution=2k",
        alice,
        files=[("file", ("a.mp4", mp4_bytes(), "video/mp4"))] * 2,
    )
    assert response.status_code == 422
    assert response.json()["error"]["details"][0] == {
        "field": "file",
        "message": "is given more than once",
    }
    assert uploads(api) == []


def test_cancel_of_a_waiting_task_removes_its_input(api, alice, mp4_bytes):
    task_id = submitted(api, alice, mp4_bytes())["task_id"]
    assert uploads(api) == [f"{task_id}.mp4"]
    api.clock.advance(2)
    canceled = api.post(f"{UPSCALE}/{task_id}/cancel", alice)
    assert canceled.status_code == 200, canceled.text
    view = canceled.json()["data"]
    assert (view["status"], view["stage"]) == ("CANCELED", "canceled")
    assert view["completed_at"] == view["finished_at"] == "2026-01-01T00:00:02.000Z"
    assert "error" not in view and "result" not in view
    assert uploads(api) == []
    assert api.post(f"{UPSCALE}/{task_id}/cancel", alice).status_code == 200  # again: 200


@pytest.mark.parametrize(
    "key", ["", "k" * 256, "caf\xe9", "tab\there"], ids=["empty", "256", "latin1", "control"]
)
def test_an_idempotency_key_must_be_printable_ascii(api, alice, mp4_bytes, key):
    headers = {"Idempotency-Key": key.encode("latin-1")}
    response = submit(api, alice, mp4_bytes(), headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == "Idempotency-Key"


def test_an_idempotent_resubmit_returns_the_first_task(api, alice, bob, mp4_bytes):
    key = {"Idempotency-Key": "order-42 / try ~1"}
    first = submitted(api, alice, mp4_bytes(), headers=key)
    api.clock.advance(60)
    again = submit(api, alice, mp4_bytes(), headers=key)
    assert again.status_code == 200
    assert again.json()["data"] == first
    assert len(api.get(UPSCALE, alice).json()["data"]["items"]) == 1
    assert uploads(api) == [f"{first['task_id']}.mp4"]  # the repeat's upload was dropped

    for changed in [{"resolution": "4k"}, {"data": {"webhook_url": "https://example.com/h"}}]:
        resolution = changed.pop("resolution", "1080p")
        reused = submit(api, alice, mp4_bytes(), resolution, headers=key, **changed)
        assert reused.status_code == 422, reused.text
        assert reused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    other_video = submit(api, alice, mp4_bytes(frames=11), headers=key)
    assert other_video.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    # Keys belong to their owner; a day later the key is free again.
    assert submitted(api, bob, mp4_bytes(), headers=key)["task_id"] != first["task_id"]
    api.clock.advance(24 * 3600)
    assert submitted(api, alice, mp4_bytes(), headers=key)["task_id"] != first["task_id"]


def test_the_webhook_body_is_the_status_with_the_submissions_links(api, alice, mp4_bytes):
    # Submitted through another host name than the one the status is read with below.
    headers = alice | {"Host": "media.example.com"}
    hook = {"webhook_url": "https://hooks.example.com/done"}
    response = api.client.post(
        f"{UPSCALE}?resolution=1080p", headers=headers, files=files(mp4_bytes()), data=hook
    )
    assert response.status_code == 200, response.text
    task_id = response.json()["data"]["task_id"]

    async def body() -> bytes:
        task = await api.ctx.store.get_task(task_id)
        return await webhook_body(api.ctx, task, "http://fallback.invalid")

    with api.client.portal() as portal:
        sent = json.loads(portal.call(body))["data"]
    read = api.get(f"{UPSCALE}/{task_id}", alice).json()["data"]
    assert sent.pop("status_url") == f"http://media.example.com{UPSCALE}/{task_id}"
    assert read.pop("status_url") == f"http://testserver.local{UPSCALE}/{task_id}"
    assert sent == read


@pytest.mark.parametrize(("limit", "waiting"), [(1, "1 task waiting"), (2, "2 tasks waiting")])
def test_the_queue_limit_answers_503_with_retry_after(make_api, mp4_bytes, limit, waiting):
    api = make_api(queue_limit=limit)
    alice, bob = api.key("alice"), api.key("bob")
    for _ in range(limit):
        submitted(api, alice, mp4_bytes())
    full = submit(api, alice, mp4_bytes())
    assert full.status_code == 503, full.text
    assert full.json()["error"]["code"] == "QUEUE_FULL"
    assert full.json()["error"]["message"].startswith(f"You have {waiting}, the most")
    assert int(full.headers["retry-after"]) > 0
    assert len(uploads(api)) == limit  # the refused upload is not kept
    submitted(api, bob, mp4_bytes())  # the limit is per owner


def test_a_completed_task_shows_its_result_and_billing(make_api, mp4_bytes):
    api = make_api(x264_preset="ultrafast")
    auth = api.key()
    task_id = submitted(api, auth, mp4_bytes())["task_id"]
    api.clock.advance(3)
    run_next(api)
    view = api.get(f"{UPSCALE}/{task_id}", auth).json()["data"]
    assert (view["status"], view["stage"], view["progress"]) == ("COMPLETED", "done", 1.0)
    assert view["started_at"] == "2026-01-01T00:00:03.000Z"
    assert view["completed_at"] == view["finished_at"] == "2026-01-01T00:00:03.000Z"
    assert "error" not in view and "queue_position" not in view and "webhook" not in view
    output = view["result"]["output"]
    assert {k: output[k] for k in ("width", "height", "frames", "frame_rate_fraction")} == {
        "width": 640, "height": 360, "frames": 10, "frame_rate_fraction": "30/1",
    }  # fmt: skip
    assert output["duration"] == pytest.approx(1 / 3) and output["size_bytes"] > 0
    assert output["readable_until"] == "2026-01-02T00:00:00.000Z"  # created_at + 1 day
    assert output["file_url"].startswith(f"http://testserver.local/files/{task_id}/output.mp4?")
    assert view["billing"] == {"billable_seconds": 5.0}
    assert uploads(api) == []  # the input goes when the task ends
    usage = api.get("/v1/usage", auth).json()["data"]
    assert usage["totals"]["upscale_billable_seconds"] == 5.0
    assert usage["items"][0]["ref_id"] == task_id

    finished = api.post(f"{UPSCALE}/{task_id}/cancel", auth)
    assert finished.status_code == 409
    assert finished.json()["error"]["code"] == "TASK_FINISHED"


def test_the_filter_field_is_kept_shown_and_used(make_api, mp4_bytes):
    api = make_api(x264_preset="ultrafast", filter="bicubic")
    auth = api.key()
    default = submitted(api, auth, mp4_bytes())["task_id"]
    chosen = submitted(api, auth, mp4_bytes(), data={"filter": "detail"})["task_id"]
    assert api.get(f"{UPSCALE}/{default}", auth).json()["data"]["filter"] == "bicubic"
    assert api.get(f"{UPSCALE}/{chosen}", auth).json()["data"]["filter"] == "detail"
    run_next(api)
    run_next(api)
    for task_id in (default, chosen):
        assert api.get(f"{UPSCALE}/{task_id}", auth).json()["data"]["status"] == "COMPLETED"


def test_detail_needs_the_native_kernel(make_api, mp4_bytes):
    api = make_api(kernel="numba")
    response = submit(api, api.key(), mp4_bytes(), data={"filter": "detail"})
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["error"]["details"]] == ["filter"]


def test_delete_is_refused_while_a_task_may_still_produce_a_result(api, alice, mp4_bytes):
    task_id = submitted(api, alice, mp4_bytes())["task_id"]
    response = api.post(f"{UPSCALE}/{task_id}/delete", alice)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CONFLICT"
    api.post(f"{UPSCALE}/{task_id}/cancel", alice)
    deleted = api.post(f"{UPSCALE}/{task_id}/delete", alice)  # nothing to delete: fine
    assert deleted.status_code == 200 and deleted.json()["data"]["status"] == "CANCELED"
