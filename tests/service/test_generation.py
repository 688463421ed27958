"""Avatar generation: the procedural generator, the task kind, and /v1/avatar/async_generate
through the test client (no worker runs there, so tasks stay queued unless a test runs them)
and through a real `serve`."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io

import httpx
import numpy as np
import pytest
from PIL import Image

from service.domain import task_runs as runs
from service.domain.generation import MAX_SEED, Generation
from service.domain.models import TaskError, WebhookOutcome
from service.domain.task_runs import Job, Stopped, TaskFailed
from service.domain.tasks import update
from service.generators.procedural import ProceduralPortraits, portrait
from service.generators.traits import HAIR, traits_of

GENERATE = "/v1/avatar/async_generate"


def status_path(task_id: str) -> str:
    return f"{GENERATE}/{task_id}/status"


def cancel_path(task_id: str) -> str:
    return f"{GENERATE}/{task_id}/cancel"


def decode_png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data), formats=("PNG",))
    image.load()
    return image


# The generator


def test_the_same_request_gives_the_same_bytes():
    first = ProceduralPortraits().render("a lighthouse keeper", 384, 320, 7)
    assert ProceduralPortraits().render("a lighthouse keeper", 384, 320, 7) == first


@pytest.mark.parametrize(
    ("prompt", "seed"), [("a lighthouse keeper!", 7), ("a lighthouse keeper", 8)]
)
def test_another_prompt_or_seed_gives_another_portrait(prompt, seed):
    reference = portrait(traits_of("a lighthouse keeper", 7), 256, 256)
    other = portrait(traits_of(prompt, seed), 256, 256)
    # Not a few pixels: most of the picture (colours, shapes, backdrop) changes.
    assert np.mean(np.any(reference != other, axis=2)) > 0.3


@pytest.mark.parametrize("size", [(256, 256), (512, 384), (1024, 256), (300, 1000)])
def test_sizes_are_honoured_and_the_png_is_valid(size):
    image = decode_png(ProceduralPortraits().render("a gardener", *size, 1))
    assert (image.format, image.mode, image.size) == ("PNG", "RGB", size)
    pixels = np.asarray(image)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 100  # a picture, not a flat fill


# sha256 of the pixels of portrait(traits_of("a stable portrait", 12345), 256, 256).
STABLE_DIGEST = "c8628c04cb8aba174d3a133128e3ea4922f94c7f07a11bfc618e2d4fd987ea9a"


def test_the_drawing_itself_is_stable():
    """A stored seed must keep meaning the same picture: when the drawing changes on purpose,
    bump `traits.VERSION` and record the new digest here."""
    pixels = portrait(traits_of("a stable portrait", 12345), 256, 256)
    digest = hashlib.sha256(pixels.tobytes()).hexdigest()
    assert digest == STABLE_DIGEST


def test_words_in_the_prompt_steer_the_matching_traits():
    for seed in range(20):
        assert traits_of("someone with red hair", seed).hair == HAIR["red"]
        assert traits_of("someone wearing glasses", seed).glasses
        assert traits_of("a bald cyclist", seed).hair_style == "bald"


# The task kind, run by hand in the test client's app


class WrongSize:
    def render(self, prompt: str, width: int, height: int, seed: int) -> bytes:
        return ProceduralPortraits().render(prompt, width + 1, height, seed)


class NotAPng:
    def render(self, prompt: str, width: int, height: int, seed: int) -> bytes:
        return b"GIF89a..."


def submit(api, auth, **body) -> dict:
    response = api.post(GENERATE, auth, json={"prompt": "a sailor", **body})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def run_next_task(api, kind=None) -> bool:
    """Claim the next task and run it as a worker would; whether it was recorded."""
    ctx, kind = api.ctx, kind or Generation(ProceduralPortraits())

    async def work() -> bool:
        task = await runs.claim(ctx, "wrk_test")
        try:
            output = await asyncio.to_thread(kind.run, Job(task, ctx.settings, ctx.files))
        except TaskFailed as exc:
            return await runs.fail(ctx, task, kind, exc.error)
        return await runs.complete(ctx, task, kind, output)

    with api.client.portal() as portal:
        return portal.call(work)


def test_a_completed_generation_is_an_avatar(api, alice):
    task = submit(api, alice, width=320, height=256, seed=42)
    assert run_next_task(api)
    status = api.get(status_path(task["task_id"]), alice).json()["data"]
    assert status["status"] == "COMPLETED" and status["progress"] == 1.0
    assert "error" not in status and "queue_position" not in status
    assert status["completed_at"] == status["finished_at"] is not None
    png = base64.b64decode(status["image"])
    assert decode_png(png).size == (320, 256)
    assert png == ProceduralPortraits().render("a sailor", 320, 256, 42)

    avatar = api.get(f"/v1/avatars/{status['avatar_id']}", alice).json()["data"]
    assert (avatar["source"], avatar["width"], avatar["height"]) == ("generated", 320, 256)
    assert avatar["name"] == "a sailor"
    listed = api.get("/v1/avatars", alice).json()["data"]["items"]
    assert [a["avatar_id"] for a in listed] == [status["avatar_id"]]
    assert api.get(f"/avatars/{status['avatar_id']}.png").content == png

    finished = api.post(cancel_path(task["task_id"]), alice)
    assert finished.status_code == 409 and finished.json()["error"]["code"] == "TASK_FINISHED"


def test_a_deleted_avatar_leaves_its_id_but_no_image(api, alice):
    task = submit(api, alice, width=256, height=256)
    run_next_task(api)
    avatar_id = api.get(status_path(task["task_id"]), alice).json()["data"]["avatar_id"]
    assert api.post(f"/v1/avatars/{avatar_id}/delete", alice).status_code == 200
    status = api.get(status_path(task["task_id"]), alice).json()["data"]
    assert status["avatar_id"] == avatar_id and "image" not in status


def test_a_run_that_ends_after_a_cancel_leaves_no_avatar(api, alice):
    task = submit(api, alice, width=256, height=256)
    ctx = api.ctx
    kind = Generation(ProceduralPortraits())

    with api.client.portal() as portal:
        claimed = portal.call(runs.claim, ctx, "wrk_test")
        output = kind.run(Job(claimed, ctx.settings, ctx.files))
    assert api.post(cancel_path(task["task_id"]), alice).json()["data"]["status"] == "CANCELED"
    with api.client.portal() as portal:
        assert not portal.call(runs.complete, ctx, claimed, kind, output)
        portal.call(runs.abandoned, ctx, claimed, kind)  # as the worker does then
    assert api.get("/v1/avatars", alice).json()["data"]["items"] == []


def test_a_set_cancel_stops_the_run(api, alice):
    submit(api, alice, width=256, height=256)
    ctx = api.ctx
    with api.client.portal() as portal:
        job = Job(portal.call(runs.claim, ctx, "wrk_test"), ctx.settings, ctx.files)
    job.cancel.set()
    with pytest.raises(Stopped):
        Generation(ProceduralPortraits()).run(job)


def test_a_rerun_finds_the_avatar_its_first_run_registered(api, alice):
    task = submit(api, alice, width=256, height=256)
    ctx, kind = api.ctx, Generation(ProceduralPortraits())
    with api.client.portal() as portal:
        claimed = portal.call(runs.claim, ctx, "wrk_test")
        output = kind.run(Job(claimed, ctx.settings, ctx.files))
        portal.call(kind.complete, ctx, claimed, output)  # the worker died before recording it
        assert portal.call(runs.complete, ctx, claimed, kind, output)
    items = api.get("/v1/avatars", alice).json()["data"]["items"]
    assert [a["avatar_id"] for a in items] == [
        api.get(status_path(task["task_id"]), alice).json()["data"]["avatar_id"]
    ]


@pytest.mark.parametrize("generator", [WrongSize(), NotAPng()], ids=["wrong size", "not a png"])
def test_a_generator_breaking_its_promise_fails_the_task(api, alice, generator):
    task = submit(api, alice, width=256, height=256)
    assert run_next_task(api, Generation(generator))
    status = api.get(status_path(task["task_id"]), alice).json()["data"]
    assert status["status"] == "FAILED" and status["error_code"] == "GENERATION_FAILED"
    assert isinstance(status["error"], str) and status["error"]
    assert "image" not in status and "avatar_id" not in status
    assert api.get("/v1/avatars", alice).json()["data"]["items"] == []


def test_a_failure_and_the_webhook_outcome_show_in_the_status(api, alice):
    hook = {"url": "https://hooks.example.com/done", "auth_token": "s3cret-token"}
    task = submit(api, alice, webhook=hook)
    ctx, kind = api.ctx, Generation(ProceduralPortraits())
    outcome = WebhookOutcome(False, api.clock.now_ms(), 502, "the receiver answered 502")

    async def fail_and_record() -> None:
        claimed = await runs.claim(ctx, "wrk_test")
        await runs.fail(ctx, claimed, kind, TaskError("GENERATION_FAILED", "It broke."))
        failed = await ctx.store.get_task(claimed.task_id)
        delivered = update(failed, ctx.clock.now_ms(), webhook_outcome=outcome)
        assert await ctx.store.save_task(delivered, failed.version)

    with api.client.portal() as portal:
        portal.call(fail_and_record)
    response = api.get(status_path(task["task_id"]), alice)
    status = response.json()["data"]
    assert (status["status"], status["error"], status["error_code"]) == (
        "FAILED", "It broke.", "GENERATION_FAILED"
    )  # fmt: skip
    assert status["webhook"] == {
        "delivered": False, "status_code": 502, "error": "the receiver answered 502",
        "attempted_at": status["updated_at"],
    }  # fmt: skip
    assert "s3cret-token" not in response.text


# The API (test client: tasks stay queued)


def test_submit_answers_200_and_the_status_while_queued(api, alice):
    first = submit(api, alice, seed=5)
    api.clock.advance(0.001)  # the queue is in order of submission, to the millisecond
    second = submit(api, alice)
    assert first["task_id"].startswith("tsk_") and first["status"] == "IN_QUEUE"
    assert first["status_url"] == f"http://testserver.local{status_path(first['task_id'])}"
    status = api.get(status_path(first["task_id"]), alice).json()["data"]
    assert status["status_url"] == first["status_url"]
    assert (status["prompt"], status["width"], status["height"], status["seed"]) == (
        "a sailor", 512, 512, 5
    )  # fmt: skip
    assert status["queue_position"] == 1 and status["completed_at"] is None
    assert status["started_at"] is None and status["created_at"].endswith("Z")
    assert not {"image", "avatar_id", "error", "webhook"} & set(status)
    later = api.get(status_path(second["task_id"]), alice).json()["data"]
    assert later["queue_position"] == 2
    assert 0 <= later["seed"] <= MAX_SEED  # drawn at submission, kept for a rerun


def test_omitted_seeds_are_drawn_and_kept(api, alice):
    seeds = {
        api.get(status_path(submit(api, alice)["task_id"]), alice).json()["data"]["seed"]
        for _ in range(3)
    }
    assert len(seeds) == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prompt": ""}, "prompt"),
        ({"prompt": "a" * 2001}, "prompt"),
        ({}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "x", "width": 255}, "width"),
        ({"prompt": "x", "height": 1025}, "height"),
        ({"prompt": "x", "width": 512.0}, "width"),
        ({"prompt": "x", "height": "512"}, "height"),
        ({"prompt": "x", "width": True}, "width"),
        ({"prompt": "x", "seed": -1}, "seed"),
        ({"prompt": "x", "seed": 2**63}, "seed"),
        ({"prompt": "x", "seed": 1.5}, "seed"),
        ({"prompt": "x", "style": "anime"}, "style"),
        ({"prompt": "x", "webhook": {"auth_token": "t"}}, "webhook.auth_token"),
        ({"prompt": "x", "webhook": {"url": "http://example.com/hook"}}, "webhook.url"),
        ({"prompt": "x", "webhook": {"url": "https://" + "a" * 1000}}, "webhook.url"),
        (
            {"prompt": "x", "webhook": {"url": "https://example.com", "retries": 3}},
            "webhook.retries",
        ),
        ({"prompt": "x", "webhook": "https://example.com"}, "webhook"),
    ],
)
def test_invalid_requests_are_422_naming_the_field(api, alice, body, field):
    response = api.post(GENERATE, alice, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert [d["field"] for d in error["details"]] == [field]
    nothing_queued = submit(api, alice)
    status = api.get(status_path(nothing_queued["task_id"]), alice).json()["data"]
    assert status["queue_position"] == 1


def test_limits_are_inclusive_and_count_code_points(api, alice):
    submit(api, alice, prompt="🙂" * 2000, width=256, height=1024, seed=MAX_SEED)
    submit(api, alice, width=None, height=None, seed=None, webhook=None)


def test_unparseable_json_is_400(api, alice):
    response = api.post(GENERATE, alice, content=b'{"prompt": ')
    assert response.status_code == 400


def test_an_idempotent_resubmit_returns_the_first_task(api, alice, bob):
    key = {"Idempotency-Key": "order-17"}
    first = api.post(GENERATE, alice | key, json={"prompt": "a baker"})
    again = api.post(GENERATE, alice | key, json={"prompt": "a baker", "width": 512})
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    other = api.post(GENERATE, alice | key, json={"prompt": "a butcher"})
    assert other.status_code == 422 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    status = api.get(status_path(first.json()["data"]["task_id"]), alice).json()["data"]
    assert status["queue_position"] == 1  # nothing else was queued
    # Keys belong to their owner: the same key of another owner is a new task.
    theirs = api.post(GENERATE, bob | key, json={"prompt": "a baker"})
    assert theirs.json()["data"]["task_id"] != first.json()["data"]["task_id"]


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9"])
def test_a_malformed_idempotency_key_is_422(api, alice, key):
    headers = {"Idempotency-Key": key.encode("utf-8")}  # bytes: sent as they are
    response = api.post(GENERATE, alice | headers, json={"prompt": "x"})
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "Idempotency-Key"


def test_cancel_while_queued_then_again(api, alice):
    task = submit(api, alice)
    canceled = api.post(cancel_path(task["task_id"]), alice)
    assert canceled.status_code == 200
    data = canceled.json()["data"]
    assert data["status"] == "CANCELED" and data["completed_at"] is not None
    assert "error" not in data and "queue_position" not in data
    again = api.post(cancel_path(task["task_id"]), alice)
    assert again.status_code == 200 and again.json()["data"]["status"] == "CANCELED"
    assert api.get(status_path(task["task_id"]), alice).json()["data"]["status"] == "CANCELED"
    assert not run_next_task_available(api)


def run_next_task_available(api) -> bool:
    with api.client.portal() as portal:
        return portal.call(runs.claim, api.ctx, "wrk_test") is not None


def test_tasks_of_another_owner_are_not_found(api, alice, bob):
    task = submit(api, alice)
    for method, path in [
        ("GET", status_path(task["task_id"])),
        ("POST", cancel_path(task["task_id"])),
    ]:
        response = api.call(method, path, bob)
        assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
    assert api.get(status_path("tsk_unknown"), alice).status_code == 404
    assert api.get(status_path(task["task_id"]), alice).json()["data"]["status"] == "IN_QUEUE"
    assert api.post(GENERATE, None, json={"prompt": "x"}).status_code == 401


# A real serve: the task worker renders it


@pytest.mark.slow
def test_generation_through_serve(start_serve, poll):
    server = start_serve()
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        body = {"prompt": "a cheerful robot mechanic", "width": 384, "height": 288, "seed": 9}
        submitted = client.post(GENERATE, json=body)
        assert submitted.status_code == 200
        task_id = submitted.json()["data"]["task_id"]

        def completed() -> dict | None:
            data = client.get(status_path(task_id)).json()["data"]
            assert data["status"] in ("IN_QUEUE", "IN_PROGRESS", "COMPLETED"), data
            return data if data["status"] == "COMPLETED" else None

        status = poll(completed, timeout=30)
        png = base64.b64decode(status["image"])
        assert decode_png(png).size == (384, 288)
        assert png == ProceduralPortraits().render(body["prompt"], 384, 288, 9)
        listed = client.get("/v1/avatars").json()["data"]["items"]
        assert [(a["avatar_id"], a["source"]) for a in listed] == [
            (status["avatar_id"], "generated")
        ]
        assert client.get(f"/avatars/{status['avatar_id']}.png").content == png
        assert client.post(cancel_path(task_id)).status_code == 409
