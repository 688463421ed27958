"""Image generation (SPEC 14): /v1/image/generate and /v1/image/async_generate through a fake
OpenAI-compatible images server on loopback (`fake_images`), the 503 without a backend, and
one task run by a real `serve`'s worker."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
import threading
import time

import httpx
import pytest
from PIL import Image

from service.domain import image_generation
from service.domain import task_runs as runs
from service.domain.image_tasks import ImageGeneration, remove_old_images
from service.domain.task_runs import Job, Stopped, TaskFailed
from service.generators.openai_images import image_backend
from service.responders import net
from tests.service.fake_images import FakeImages, colour_of

GENERATE = "/v1/image/generate"
ASYNC = "/v1/image/async_generate"
KIND = ImageGeneration(image_backend)


def status_path(task_id: str) -> str:
    return f"{ASYNC}/{task_id}/status"


@pytest.fixture
def fake():
    server = FakeImages().start()
    yield server
    server.stop()


@pytest.fixture
def drawing(make_api, fake):
    """An app whose images backend is the fake server."""
    return make_api(image_base_url=fake.url(), image_api_key="sk-test", image_model="painter-2")


def jpeg_of(encoded: str) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(encoded)), formats=("JPEG",))
    image.load()
    return image


def data_url(colour: tuple[int, int, int], fmt: str = "PNG") -> str:
    out = io.BytesIO()
    options = {"lossless": True} if fmt == "WEBP" else {}
    Image.new("RGB", (40, 30), colour).save(out, format=fmt, **options)
    mime = {"PNG": "png", "JPEG": "jpeg", "WEBP": "webp"}[fmt]
    return f"data:image/{mime};base64," + base64.b64encode(out.getvalue()).decode()


def run_next_task(api) -> bool:
    """Claim the next task and run it as a worker would; whether it was recorded."""
    ctx = api.ctx

    async def work() -> bool:
        task = await runs.claim(ctx, "wrk_test")
        try:
            output = await asyncio.to_thread(KIND.run, Job(task, ctx.settings, ctx.files))
        except TaskFailed as exc:
            return await runs.fail(ctx, task, KIND, exc.error)
        return await runs.complete(ctx, task, KIND, output)

    with api.client.portal() as portal:
        return portal.call(work)


# Without a backend


@pytest.mark.parametrize("path", [GENERATE, ASYNC])
def test_without_a_backend_both_calls_answer_503_naming_the_setting(api, alice, path):
    response = api.post(path, alice, json={"prompt": "a red kite", "aspect_ratio": "1:1"})
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "NOT_CONFIGURED" and "AVATAR_IMAGE_BASE_URL" in error["message"]
    assert "Retry-After" not in response.headers
    assert api.get("/v1/usage", alice).json()["data"]["totals"]["image_count"] == 0


# The synchronous call


@pytest.mark.parametrize(
    ("ratio", "size"), [("16:9", (1344, 768)), ("1:1", (1024, 1024)), ("2:3", (832, 1216))]
)
def test_generate_answers_a_jpeg_of_the_table_size(drawing, fake, ratio, size):
    alice = drawing.key("alice")
    body = {"prompt": "a lighthouse at dusk", "aspect_ratio": ratio}
    response = drawing.post(GENERATE, alice, json=body)
    assert response.status_code == 200, response.text
    assert set(response.json()["data"]) == {"image"}
    image = jpeg_of(response.json()["data"]["image"])
    assert image.size == size
    # The backend's picture, re-encoded (JPEG keeps a flat colour within a step or two).
    pixel = image.getpixel((size[0] // 2, size[1] // 2))
    assert all(abs(a - b) <= 3 for a, b in zip(pixel, colour_of(body["prompt"]), strict=True))
    [sent] = fake.requests
    assert sent.path == "/v1/images/generations"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.fields == {
        "model": "painter-2", "prompt": body["prompt"], "size": f"{size[0]}x{size[1]}", "n": 1
    }  # fmt: skip
    totals = drawing.get("/v1/usage", alice).json()["data"]
    assert totals["totals"]["image_count"] == 1
    assert [item["kind"] for item in totals["items"]] == ["image"]


def test_a_seed_is_sent_when_given(drawing, fake):
    alice = drawing.key("alice")
    body = {"prompt": "a seeded fox", "aspect_ratio": "1:1", "seed": 2**31 - 1}
    assert drawing.post(GENERATE, alice, json=body).status_code == 200
    assert fake.requests[0].fields["seed"] == 2**31 - 1


def test_reference_images_go_to_the_edits_endpoint_with_their_labels(drawing, fake):
    alice = drawing.key("alice")
    images = [
        {"data": data_url((200, 10, 10)), "label": "Product"},
        {"data": data_url((10, 200, 10), "JPEG")},
        {"data": data_url((10, 10, 200), "WEBP").partition(",")[2], "label": "Logo"},
    ]
    body = {"prompt": "the product on a table", "aspect_ratio": "4:3", "images": images}
    response = drawing.post(GENERATE, alice, json=body)
    assert response.status_code == 200, response.text
    assert jpeg_of(response.json()["data"]["image"]).size == (1152, 896)
    [sent] = fake.requests
    assert sent.path == "/v1/images/edits"
    assert sent.fields["size"] == "1152x896" and sent.fields["model"] == "painter-2"
    assert sent.fields["prompt"] == (
        "the product on a table\n\nReference images, in the order given: "
        "image 1: Product; image 3: Logo."
    )
    assert [name for name, _ in sent.files] == ["image[]"] * 3
    sent_colours = []
    for _, data in sent.files:
        image = Image.open(io.BytesIO(data), formats=("PNG",))  # re-encoded by the service
        sent_colours.append(image.convert("RGB").getpixel((5, 5)))
    assert sent_colours[0] == (200, 10, 10) and sent_colours[2] == (10, 10, 200)


def test_one_reference_is_sent_as_image(drawing, fake):
    body = {"prompt": "p", "aspect_ratio": "1:1", "images": [{"data": data_url((1, 2, 3))}]}
    assert drawing.post(GENERATE, drawing.key(), json=body).status_code == 200
    assert [name for name, _ in fake.requests[0].files] == ["image"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("data:image/png,abc", "data URL"),
        ("not base64!", "base64"),
        (base64.b64encode(b"GIF89a not a picture").decode(), "PNG, JPEG or WebP"),
    ],
)
def test_bad_reference_images_are_422_naming_the_image(drawing, fake, data, message):
    body = {
        "prompt": "p",
        "aspect_ratio": "1:1",
        "images": [{"data": data_url((1, 2, 3))}, {"data": data}],
    }
    response = drawing.post(GENERATE, drawing.key(), json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["details"][0]["field"] == "images[1].data" and message in error["message"]
    assert fake.requests == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"aspect_ratio": "1:1"}, "prompt"),
        ({"prompt": "p"}, "aspect_ratio"),
        ({"prompt": "p", "aspect_ratio": "5:4"}, "aspect_ratio"),
        ({"prompt": "", "aspect_ratio": "1:1"}, "prompt"),
        ({"prompt": "p", "aspect_ratio": "1:1", "seed": -1}, "seed"),
        ({"prompt": "p", "aspect_ratio": "1:1", "seed": 2**31}, "seed"),
        ({"prompt": "p", "aspect_ratio": "1:1", "images": [{"data": "x"}] * 6}, "images"),
        (
            {"prompt": "p", "aspect_ratio": "1:1", "webhook": {"url": "https://a.example"}},
            "webhook",
        ),
    ],
)
def test_invalid_bodies_are_422_naming_the_field(drawing, body, field):
    response = drawing.post(GENERATE, drawing.key(), json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == field


def test_a_backend_refusal_is_502_with_its_reason(drawing, fake):
    fake.status, fake.body = 400, b'{"error": {"message": "Invalid size: 1344x768."}}'
    response = drawing.post(GENERATE, drawing.key(), json={"prompt": "p", "aspect_ratio": "16:9"})
    assert response.status_code == 502
    assert response.json()["error"] == {
        "code": "UPSTREAM_ERROR",
        "message": "The image backend answered HTTP 400: Invalid size: 1344x768.",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"data": []}', "holds no picture"),
        (b'{"data": [{"b64_json": "bm90IGFuIGltYWdl"}]}', "cannot be used"),
        (b"<html>", "holds no picture"),
    ],
)
def test_a_backend_answer_without_a_picture_is_502(drawing, fake, body, message):
    fake.body = body
    response = drawing.post(GENERATE, drawing.key(), json={"prompt": "p", "aspect_ratio": "1:1"})
    assert response.status_code == 502 and message in response.json()["error"]["message"]
    assert drawing.get("/v1/usage", drawing.key()).json()["data"]["totals"]["image_count"] == 0


def test_a_url_answer_is_fetched_under_the_outbound_rules(make_api, fake):
    fake.answer_url = True
    body = {"prompt": "a url picture", "aspect_ratio": "1:1"}
    allowed = make_api(image_base_url=fake.url(), webhook_allow_private=True)
    response = allowed.post(GENERATE, allowed.key(), json=body)
    assert response.status_code == 200, response.text
    assert jpeg_of(response.json()["data"]["image"]).size == (1024, 1024)
    # Without AVATAR_WEBHOOK_ALLOW_PRIVATE a loopback URL is refused, as an owner's would be.
    strict = make_api(image_base_url=fake.url())
    response = strict.post(GENERATE, strict.key(), json=body)
    assert response.status_code == 502
    assert "must be an https URL" in response.json()["error"]["message"]


def test_a_url_on_a_host_resolving_to_a_private_address_is_refused(drawing, fake, monkeypatch):
    """Checked again where the connection opens: a public-looking name whose address is
    loopback is not fetched (no request leaves this machine: the name's lookup is faked)."""
    fake.body = b'{"data": [{"url": "https://images.example.com/p.png"}]}'

    async def resolves_to_loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    monkeypatch.setattr(net, "resolve", resolves_to_loopback)
    response = drawing.post(GENERATE, drawing.key(), json={"prompt": "p", "aspect_ratio": "1:1"})
    assert response.status_code == 502
    assert "resolves to non-public 127.0.0.1" in response.json()["error"]["message"]


def test_a_slow_backend_is_504(drawing, fake, monkeypatch):
    monkeypatch.setattr(image_generation, "SYNC_LIMIT_S", 0.3)
    fake.delay = threading.Event()
    response = drawing.post(GENERATE, drawing.key(), json={"prompt": "p", "aspect_ratio": "1:1"})
    assert response.status_code == 504
    error = response.json()["error"]
    assert error["code"] == "UPSTREAM_TIMEOUT" and "0.3 s" in error["message"]
    fake.delay.set()


# The task


def submit(api, auth, headers=None, **body) -> dict:
    body = {"prompt": "a harbour", "aspect_ratio": "3:2", **body}
    response = api.post(ASYNC, {**auth, **(headers or {})}, json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_a_task_completes_with_the_jpeg_and_counts_one_image(drawing, fake):
    alice = drawing.key("alice")
    images = [{"data": data_url((9, 9, 9)), "label": "Mood"}]
    task = submit(drawing, alice, seed=5, images=images)
    assert set(task) == {"task_id", "status", "status_url"} and task["status"] == "IN_QUEUE"
    assert task["status_url"].endswith(status_path(task["task_id"]))
    queued = drawing.get(status_path(task["task_id"]), alice).json()["data"]
    assert (queued["status"], queued["queue_position"]) == ("IN_QUEUE", 1)
    assert "image" not in queued and "error" not in queued
    assert run_next_task(drawing)
    done = drawing.get(status_path(task["task_id"]), alice).json()["data"]
    assert (done["status"], done["kind"], done["seed"]) == ("COMPLETED", "image_generation", 5)
    assert jpeg_of(done["image"]).size == (1216, 832)
    [sent] = fake.requests
    assert sent.path == "/v1/images/edits" and sent.fields["seed"] == "5"
    assert sent.fields["prompt"].endswith("image 1: Mood.")
    usage = drawing.get("/v1/usage", alice).json()["data"]
    assert usage["totals"]["image_count"] == 1
    assert [(i["kind"], i["ref_id"]) for i in usage["items"]] == [("image", task["task_id"])]
    # The reference image was the task's input: gone once it ended.
    assert not _uploads(drawing)


def test_a_drawn_image_is_kept_until_the_result_ttl(drawing, fake):
    alice = drawing.key("alice")
    task = submit(drawing, alice)
    assert run_next_task(drawing)
    assert "image" in drawing.get(status_path(task["task_id"]), alice).json()["data"]
    # Files are stamped with the real time: the test clock moves to a minute past the TTL of
    # a file written now.
    behind_s = time.time() - drawing.clock.now_ms() / 1000
    drawing.clock.advance(behind_s + drawing.ctx.settings.result_ttl_s + 60)
    with drawing.client.portal() as portal:
        portal.call(remove_old_images, drawing.ctx)
    kept = drawing.get(status_path(task["task_id"]), alice).json()["data"]
    assert kept["status"] == "COMPLETED" and "image" not in kept


def _uploads(api) -> list:
    with api.client.portal() as portal:
        return portal.call(api.ctx.files.stale, "uploads/", 2**62)


def test_a_backend_error_fails_the_task_with_its_message(drawing, fake):
    alice = drawing.key("alice")
    task = submit(drawing, alice)
    fake.status = 500
    assert run_next_task(drawing)
    failed = drawing.get(status_path(task["task_id"]), alice).json()["data"]
    assert failed["status"] == "FAILED" and failed["error_code"] == "UPSTREAM_ERROR"
    assert failed["error"] == "The image backend answered HTTP 500: no." and "image" not in failed
    assert drawing.get("/v1/usage", alice).json()["data"]["totals"]["image_count"] == 0


def test_a_task_whose_backend_went_away_fails_saying_so(drawing):
    task = submit(drawing, drawing.key("alice"))
    ctx = drawing.ctx
    with drawing.client.portal() as portal:
        claimed = portal.call(runs.claim, ctx, "wrk_test")
    unconfigured = dataclasses.replace(ctx.settings, image_base_url=None)
    with pytest.raises(TaskFailed) as failure:
        KIND.run(Job(claimed, unconfigured, ctx.files))
    assert failure.value.error.code == "NOT_CONFIGURED"
    assert task["task_id"] == claimed.task_id


def test_a_cancel_stops_a_run_waiting_on_the_backend(drawing, fake):
    alice = drawing.key("alice")
    submit(drawing, alice)
    fake.delay = threading.Event()
    ctx = drawing.ctx
    with drawing.client.portal() as portal:
        job = Job(portal.call(runs.claim, ctx, "wrk_test"), ctx.settings, ctx.files)
    threading.Timer(0.3, job.cancel.set).start()
    with pytest.raises(Stopped):
        KIND.run(job)
    fake.delay.set()


def test_cancel_while_queued_removes_the_references(drawing, fake):
    alice = drawing.key("alice")
    task = submit(drawing, alice, images=[{"data": data_url((1, 1, 1))}])
    assert len(_uploads(drawing)) == 1
    cancel = f"{ASYNC}/{task['task_id']}/cancel"
    assert drawing.post(cancel, alice).json()["data"]["status"] == "CANCELED"
    assert drawing.post(cancel, alice).status_code == 200
    assert _uploads(drawing) == [] and fake.requests == []


def test_idempotency_keys_and_the_queue_limit(make_api, fake):
    api = make_api(image_base_url=fake.url(), queue_limit=1)
    alice = api.key("alice")
    key = {"Idempotency-Key": "picture-1"}
    first = submit(api, alice, key)
    assert submit(api, alice, key) == first
    refused = api.post(ASYNC, {**alice, **key}, json={"prompt": "other", "aspect_ratio": "1:1"})
    assert (
        refused.status_code == 422 and refused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    )
    full = api.post(ASYNC, alice, json={"prompt": "more", "aspect_ratio": "1:1"})
    assert full.status_code == 503 and full.json()["error"]["code"] == "QUEUE_FULL"


def test_tasks_of_another_owner_are_not_found(drawing):
    task = submit(drawing, drawing.key("alice"))
    bob = drawing.key("bob")
    assert drawing.get(status_path(task["task_id"]), bob).status_code == 404
    assert drawing.post(f"{ASYNC}/{task['task_id']}/cancel", bob).status_code == 404


def test_an_image_task_through_serve_with_its_webhook(start_serve, fake, receiver, poll):
    server = start_serve(AVATAR_IMAGE_BASE_URL=fake.url(), AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        body = {
            "prompt": "a served picture",
            "aspect_ratio": "9:16",
            "webhook": {"url": receiver.url()},
        }
        task_id = client.post(ASYNC, json=body).json()["data"]["task_id"]

        def completed() -> dict | None:
            data = client.get(status_path(task_id)).json()["data"]
            assert data["status"] in ("IN_QUEUE", "IN_PROGRESS", "COMPLETED"), data
            return data if data["status"] == "COMPLETED" else None

        status = poll(completed, timeout=30)
        assert jpeg_of(status["image"]).size == (768, 1344)
        [hook] = receiver.wait_for(1)
        posted = json.loads(hook.body)["data"]
        assert (posted["task_id"], posted["status"]) == (task_id, "COMPLETED")
        assert posted["image"] == status["image"] and hook.headers["webhook-id"] == task_id
