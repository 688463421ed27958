"""Generated videos as tasks and requests: cancel (waiting and running), idempotency, the queue
limit, the webhook, and every bad input refused with a clear error (helpers and the portrait
from test_talking_video)."""

from __future__ import annotations

import asyncio
import io

import msgspec
import numpy as np
import pytest
from PIL import Image

from service.domain import task_runs as runs
from service.domain.files import result_key
from service.domain.talking import TALKING
from service.domain.talking.run import GeneratedVideo
from service.domain.task_runs import Job, Stopped, TaskFailed
from service.generators.talking_video import BuiltInTalkingVideos
from service.workers.webhook_client import HttpTransport
from service.workers.webhooks import WebhookSender
from tests.service import hosted_types as hosted
from tests.service.test_talking_video import (
    FACE,
    FACES,
    MOVE,
    PORTRAIT,
    SPEECH,
    TALK,
    WAV,
    KnownFaces,
    b64,
    run_next,
    submit,
    wav_of,
)

# Tasks: cancel, idempotency, queue limit


def test_cancel_removes_the_inputs(api, alice):
    task = submit(api, alice)
    response = api.post(f"{TALK}/{task.task_id}/cancel", alice)
    assert response.status_code == 200 and response.json()["data"]["status"] == "CANCELED"
    stored = asyncio.run(_uploads(api))
    assert not [key for key in stored if task.task_id in key]
    assert api.get(f"{MOVE}/{task.task_id}/status", alice).status_code == 404  # other kind


async def _uploads(api) -> list[str]:
    return await api.ctx.files.stale("uploads/", 2**62)


def test_an_idempotent_repeat_answers_the_first_task(api, alice):
    key = {"Idempotency-Key": "video-1"}
    first = api.post(TALK, alice | key, json={"image": b64(PORTRAIT), "audio": b64(WAV)})
    again = api.post(TALK, alice | key, json={"image": b64(PORTRAIT), "audio": b64(WAV)})
    assert first.json()["data"]["task_id"] == again.json()["data"]["task_id"]
    other = api.post(TALK, alice | key, json={"image": b64(PORTRAIT), "audio": b64(WAV[:-2000])})
    assert other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_the_queue_limit_holds(make_api):
    api = make_api(queue_limit=1)
    alice = api.key("alice")
    submit(api, alice)
    response = api.post(MOVE, alice, json={"image": b64(PORTRAIT), "audio": b64(WAV)})
    assert response.status_code == 503 and response.json()["error"]["code"] == "QUEUE_FULL"


# Bad input


def _big_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4097, 8)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("change", "status_code", "code", "field"),
    [
        ({"image": None}, 422, "VALIDATION_ERROR", "image"),
        ({"avatar_id": "av_nope"}, 422, "VALIDATION_ERROR", "image"),
        ({"image": "not base64!"}, 422, "VALIDATION_ERROR", "image"),
        ({"image": b64(b"GIF89a not a picture")}, 422, "VALIDATION_ERROR", "image"),
        ({"image": b64(_big_png())}, 422, "VALIDATION_ERROR", "image"),
        ({"audio": None}, 422, "VALIDATION_ERROR", "audio"),
        ({"text": "Hi"}, 422, "VALIDATION_ERROR", "audio"),
        ({"audio": b64(b"RIFF....WAVEfmt nonsense")}, 422, "INVALID_AUDIO", None),
        ({"audio": None, "text": "Hi"}, 422, "VALIDATION_ERROR", "voice_profile_id"),
        (
            {"audio": None, "text": "Hi", "voice_profile_id": "vp_nope"},
            422,
            "VALIDATION_ERROR",
            "voice_profile_id",
        ),
        ({"colour": "blue"}, 422, "VALIDATION_ERROR", "colour"),
        ({"webhook": {"url": "ftp://example.com/x"}}, 422, "VALIDATION_ERROR", "webhook.url"),
    ],
)
def test_bad_requests_are_refused_clearly(api, alice, change, status_code, code, field):
    body = {"image": b64(PORTRAIT), "audio": b64(WAV)} | change
    response = api.post(TALK, alice, json={k: v for k, v in body.items() if v is not None})
    assert response.status_code == status_code, response.text
    error = response.json()["error"]
    assert error["code"] == code
    if field is not None:
        assert error["details"][0]["field"] == field


def test_prompts_are_limited(api, alice):
    body = {"image": b64(PORTRAIT), "audio": b64(WAV), "positive_prompt": "x" * 513}
    assert api.post(MOVE, alice, json=body).status_code == 422


def test_an_avatar_of_another_owner_is_unknown(api, alice, bob):
    avatar = api.avatar(alice, PORTRAIT)
    body = {"avatar_id": avatar["avatar_id"], "audio": b64(WAV)}
    response = api.post(TALK, bob, json=body)
    assert response.status_code == 422 and response.json()["error"]["details"][0] == {
        "field": "avatar_id",
        "message": "no avatar of yours has this id",
    }


def test_audio_over_its_limit_is_refused(api, alice, monkeypatch):
    monkeypatch.setattr("service.domain.talking.inputs.MAX_AUDIO_BYTES", 1000)
    response = api.post(TALK, alice, json={"image": b64(PORTRAIT), "audio": b64(WAV)})
    assert response.status_code == 413
    monkeypatch.setattr("service.domain.talking.inputs.MAX_AUDIO_S", 1.0)
    monkeypatch.setattr("service.domain.talking.inputs.MAX_AUDIO_BYTES", 10**8)
    response = api.post(TALK, alice, json={"image": b64(PORTRAIT), "audio": b64(WAV)})
    assert response.json()["error"]["code"] == "INVALID_AUDIO"


def test_the_webhook_posts_the_status_view(make_api, receiver):
    api = make_api(webhook_allow_private=True)
    alice = api.key("alice")
    task = submit(api, alice, path=MOVE, webhook={"url": receiver.url(), "auth_token": "t0k"})
    run_next(api)
    sender = WebhookSender(api.ctx, HttpTransport(), "http://avatars.test")

    async def once() -> None:
        await sender.send_claimable()
        await sender.drain()

    with api.client.portal() as portal:
        portal.call(once)
    [delivery] = receiver.wait_for(1)
    assert delivery.headers["authorization"] == "Bearer t0k"
    body = msgspec.json.decode(delivery.body, type=hosted.GenerateAvatarMotionStatusApiResponseBody)
    assert body.data.task_id == task.task_id and body.data.status == "COMPLETED"
    assert body.data.file_url.startswith("http") and body.data.output_duration == 3.0


def test_a_cancel_stops_a_running_video_and_leaves_no_file(api, alice):
    task = submit(api, alice)
    ctx = api.ctx
    with api.client.portal() as portal:
        claimed = portal.call(runs.claim, ctx, "wrk_test")
        job = Job(claimed, ctx.settings, ctx.files)
        job.cancel.set()
        with pytest.raises(Stopped):
            GeneratedVideo(TALKING, FACES, BuiltInTalkingVideos()).run(job)
        assert portal.call(ctx.files.size, result_key(task.task_id)) is None


def test_bodies_may_hold_media_up_to_32_mib(api, alice):
    long_speech = wav_of(np.tile(SPEECH, 10))  # 30 s, 1.4 MB: past the 1 MiB of other bodies
    response = api.post(TALK, alice, json={"image": b64(PORTRAIT), "audio": b64(long_speech)})
    assert response.status_code == 200, response.text
    oversized = b'{"image": "' + b"A" * (32 * 1024 * 1024) + b'"}'
    headers = alice | {"Content-Type": "application/json"}
    response = api.post(MOVE, headers, content=oversized)
    assert response.status_code == 413 and response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_landmarks_outside_the_image_fail_the_task_saying_so(api, alice):
    outside = msgspec.structs.replace(FACE, left=-5000.0, top=-5000.0)
    finder = KnownFaces()
    finder.add(PORTRAIT, outside)
    task = submit(api, alice)
    ctx = api.ctx
    with api.client.portal() as portal:
        claimed = portal.call(runs.claim, ctx, "wrk_test")
        with pytest.raises(TaskFailed) as failed:
            GeneratedVideo(TALKING, finder, BuiltInTalkingVideos()).run(
                Job(claimed, ctx.settings, ctx.files)
            )
        assert failed.value.error.code == "PROCESSING_FAILED"
        assert portal.call(ctx.files.size, result_key(task.task_id)) is None


@pytest.mark.parametrize("fmt", ["JPEG", "WEBP"])
def test_jpeg_and_webp_portraits_are_taken(api, alice, fmt):
    out = io.BytesIO()
    Image.open(io.BytesIO(PORTRAIT)).save(out, format=fmt)
    submit(api, alice, image=b64(out.getvalue()))
