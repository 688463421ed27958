"""Avatars built from a photo (POST /v1/avatar/async_build, SPEC 14): scikit-image's astronaut
becomes a READY portrait with its face kept; a photo without a face, with two, or with one too
small ends in ERROR saying which; a not-READY avatar cannot be used and has no image; a build
interrupted by its worker's death is run again, and never left PENDING. Through the test
client (the build run as a worker would) and once through a real `serve`."""

from __future__ import annotations

import asyncio
import base64
import html
import io
import os
import signal
import time

import httpx
import msgspec
import pytest
from PIL import Image

from service.domain import task_runs as runs
from service.domain.avatar_builds import ABANDONED_PHOTO_MS, AvatarBuild, remove_abandoned_photos
from service.domain.avatars import build_task_id
from service.domain.faces import FaceLandmarks
from service.domain.files import build_photo_key
from service.domain.portraits import EYES_AT, PORTRAIT_SIDE
from service.domain.task_runs import Job, TaskFailed
from service.generators.face_finders import face_finder
from tests.service.hosted_types import AsyncBuildApiResponseBody, GetAvatarApiResponseBody, read
from tests.service.test_pages import parse

skimage_data = pytest.importorskip("skimage.data")

BUILD = "/v1/avatar/async_build"
KIND = AvatarBuild(face_finder())


def encoded(image: Image.Image, fmt: str = "PNG") -> str:
    out = io.BytesIO()
    image.save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode()


def astronaut() -> Image.Image:
    return Image.fromarray(skimage_data.astronaut())


def two_faces() -> Image.Image:
    """Two copies of the astronaut's head side by side (the finder sees both)."""
    head = astronaut().crop((120, 0, 370, 260))
    both = Image.new("RGB", (520, 260), (128, 128, 128))
    both.paste(head, (0, 0))
    both.paste(head, (270, 0))
    return both


def small_face() -> Image.Image:
    """The astronaut shrunk into a corner: a face about 50 px wide."""
    canvas = Image.new("RGB", (480, 480), (128, 128, 128))
    canvas.paste(astronaut().resize((240, 240)), (0, 0))
    return canvas


def build(api, auth, image: Image.Image, name: str = "Astro", fmt: str = "PNG", headers=None):
    body = {"image": encoded(image, fmt), "name": name}
    return api.post(BUILD, {**auth, **(headers or {})}, json=body)


def started(api, auth, image: Image.Image, **kwargs) -> str:
    response = build(api, auth, image, **kwargs)
    assert response.status_code == 200, response.text
    return read(response, AsyncBuildApiResponseBody).data.avatar_id


def run_build(api) -> bool:
    """Claim the next task (a build) and run it as a worker would."""
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


def hosted(api, auth, avatar_id: str):
    return read(api.get(f"/v1/avatar/{avatar_id}", auth), GetAvatarApiResponseBody).data


def stored(api, avatar_id: str):
    with api.client.portal() as portal:
        return portal.call(api.ctx.store.get_avatar, avatar_id)


def test_the_astronaut_becomes_a_ready_aligned_portrait(api, alice):
    avatar_id = started(api, alice, astronaut())
    pending = hosted(api, alice, avatar_id)
    assert (pending.status, pending.themes, pending.name) == ("PENDING", [], "Astro")
    assert api.get(f"/avatars/{avatar_id}.png").status_code == 404
    assert run_build(api)
    ready = hosted(api, alice, avatar_id)
    assert ready.status == "READY" and ready.themes[0].key_image.endswith(f"{avatar_id}.png")
    ours = api.get(f"/v1/avatars/{avatar_id}", alice).json()["data"]
    assert (ours["status"], ours["width"], ours["height"]) == ("READY", 512, 512)
    assert "error" not in ours
    png = api.get(f"/avatars/{avatar_id}.png")
    assert png.status_code == 200
    portrait = Image.open(io.BytesIO(png.content), formats=("PNG",))
    assert portrait.size == (PORTRAIT_SIDE, PORTRAIT_SIDE)
    face = stored(api, avatar_id).face
    # Centred, eyes level at their line, the mouth below them: the portrait format.
    eyes_y = (face.left_eye.y + face.right_eye.y) / 2
    assert abs(eyes_y - EYES_AT * PORTRAIT_SIDE) < 2
    assert abs(face.left_eye.y - face.right_eye.y) < 2
    assert abs((face.left_eye.x + face.right_eye.x) / 2 - PORTRAIT_SIDE / 2) < 2
    assert face.left_eye.x < face.right_eye.x and face.mouth.y > eyes_y + 40
    # The face is there: the finder sees one where the stored points say.
    [found] = face_finder().find(png.content)
    assert abs(found.mouth.x - face.mouth.x) < 30 and abs(found.mouth.y - face.mouth.y) < 30
    # Usable now, and its page's canvas talks with the face the build kept.
    agent = api.post("/v1/agents", alice, json={"name": "Astro", "avatar_id": avatar_id})
    assert agent.status_code == 201, agent.text
    route = api.route(alice, agent.json()["data"]["agent_id"])
    page = parse(api.get(f"/r/{route['id']}").text).data["data-face"]
    assert msgspec.json.decode(html.unescape(page), type=FaceLandmarks) == face


@pytest.mark.parametrize(
    ("image", "code", "message"),
    [
        (Image.fromarray(skimage_data.coffee()), "NO_FACE", "No face was found in the image"),
        (two_faces(), "SEVERAL_FACES", "2 faces were found in the image"),
        (small_face(), "FACE_TOO_SMALL", "too small for a portrait"),
    ],
    ids=["no face", "two faces", "small face"],
)
def test_a_photo_without_one_usable_face_ends_in_error(api, alice, image, code, message):
    avatar_id = started(api, alice, image)
    assert run_build(api)
    avatar = hosted(api, alice, avatar_id)
    assert avatar.status == "ERROR" and avatar.themes == []
    ours = api.get(f"/v1/avatars/{avatar_id}", alice).json()["data"]
    assert ours["status"] == "ERROR" and message in ours["error"]
    assert api.get(f"/avatars/{avatar_id}.png").status_code == 404
    with api.client.portal() as portal:
        task = portal.call(api.ctx.store.get_task, build_task_id(avatar_id))
    assert task.error.code == code


def test_a_not_ready_avatar_cannot_be_used(api, alice):
    avatar_id = started(api, alice, astronaut())
    agent = api.post("/v1/agents", alice, json={"name": "A", "avatar_id": avatar_id})
    assert agent.status_code == 422
    assert "PENDING" in agent.json()["error"]["message"]
    session = api.post("/v1/interactive/start_session", alice, json={"avatar_id": avatar_id})
    assert session.status_code == 422
    assert session.json()["error"]["details"][0]["field"] == "avatar_id"


def test_building_shows_while_a_worker_runs_it(api, alice):
    avatar_id = started(api, alice, astronaut())
    with api.client.portal() as portal:
        portal.call(runs.claim, api.ctx, "wrk_test")
    assert hosted(api, alice, avatar_id).status == "BUILDING"
    listed = api.get("/v1/avatar/list", alice).json()["data"]
    assert [(a["id"], a["status"]) for a in listed] == [(avatar_id, "BUILDING")]


def test_a_build_whose_workers_keep_dying_ends_in_error(api, alice):
    avatar_id = started(api, alice, astronaut())
    ctx = api.ctx

    async def workers_die() -> None:
        for _ in range(3):  # the first run and its two reruns
            await runs.claim(ctx, "wrk_doomed")
            api.clock.advance(runs.LEASE_MS / 1000 + 1)
            await runs.recover_lapsed(ctx, {KIND.name: KIND})

    with api.client.portal() as portal:
        portal.call(workers_die)
    ours = api.get(f"/v1/avatars/{avatar_id}", alice).json()["data"]
    assert ours["status"] == "ERROR" and "run again 2 times" in ours["error"]


def test_a_build_interrupted_once_runs_again_to_ready(api, alice):
    avatar_id = started(api, alice, astronaut())
    ctx = api.ctx

    async def worker_dies() -> None:
        await runs.claim(ctx, "wrk_doomed")
        api.clock.advance(runs.LEASE_MS / 1000 + 1)
        await runs.recover_lapsed(ctx, {KIND.name: KIND})

    with api.client.portal() as portal:
        portal.call(worker_dies)
    assert hosted(api, alice, avatar_id).status == "PENDING"
    assert run_build(api)
    assert hosted(api, alice, avatar_id).status == "READY"


def test_deleting_a_pending_avatar_stops_its_build(api, alice):
    avatar_id = started(api, alice, astronaut())
    assert api.call("DELETE", f"/v1/avatar/{avatar_id}", alice).status_code == 204
    with api.client.portal() as portal:
        task = portal.call(api.ctx.store.get_task, build_task_id(avatar_id))
        leftovers = portal.call(api.ctx.files.stale, "builds/", 2**62)
    assert task.status == "CANCELED" and leftovers == []
    assert api.get(f"/v1/avatar/{avatar_id}", alice).status_code == 404


def test_an_idempotent_resubmit_answers_the_first_avatar(api, alice):
    key = {"Idempotency-Key": "astro-1"}
    first = started(api, alice, astronaut(), headers=key)
    assert started(api, alice, astronaut(), headers=key) == first
    other = build(api, alice, astronaut(), name="Other", headers=key)
    assert other.status_code == 422 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert [a["id"] for a in api.get("/v1/avatar/list", alice).json()["data"]] == [first]


def test_the_queue_limit_holds_builds_too(make_api):
    api = make_api(queue_limit=1)
    alice = api.key("alice")
    started(api, alice, astronaut())
    full = build(api, alice, astronaut())
    assert full.status_code == 503 and full.json()["error"]["code"] == "QUEUE_FULL"
    assert len(api.get("/v1/avatar/list", alice).json()["data"]) == 1


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"image": "not base64!", "name": "A"}, 422, "image"),
        ({"image": base64.b64encode(b"GIF89a....").decode(), "name": "A"}, 422, "image"),
        ({"image": encoded(Image.new("RGB", (4097, 8))), "name": "A"}, 422, "image"),
        ({"image": encoded(Image.new("RGB", (8, 8)))}, 422, "name"),
        ({"image": encoded(Image.new("RGB", (8, 8))), "name": ""}, 422, "name"),
        ({"image": "", "name": "A"}, 422, "image"),
        ({"image": base64.b64encode(bytes(10 * 1024 * 1024 + 1)).decode(), "name": "A"}, 413, None),
    ],
    ids=["not base64", "not an image", "too wide", "no name", "empty name", "empty", "too large"],
)
def test_bad_requests_are_refused_at_once(api, alice, body, status, field):
    response = api.post(BUILD, alice, json=body)
    assert response.status_code == status, response.text
    if field is not None:
        assert response.json()["error"]["details"][0]["field"] == field
    assert api.get("/v1/avatar/list", alice).json()["data"] == []


def test_a_build_cut_short_by_a_killed_serve_ends_ready_after_the_restart(start_serve, poll):
    """Killed right after the submission (the build waiting or running), the next `serve` on
    the same data dir finishes it: no avatar is left PENDING."""
    first = start_serve()
    body = {"image": encoded(astronaut(), "WEBP"), "name": "Served"}
    with httpx.Client(base_url=first.base, headers=first.auth, timeout=30) as client:
        avatar_id = read(client.post(BUILD, json=body), AsyncBuildApiResponseBody).data.avatar_id
    os.killpg(first.process.pid, signal.SIGKILL)  # every process of serve at once
    first.process.wait()
    second = start_serve(data_dir=first.data_dir, port=first.port)
    with httpx.Client(base_url=second.base, headers=first.auth, timeout=30) as client:

        def ready():
            avatar = read(client.get(f"/v1/avatar/{avatar_id}"), GetAvatarApiResponseBody).data
            assert avatar.status in ("PENDING", "BUILDING", "READY"), avatar
            return avatar.status == "READY" and avatar

        avatar = poll(ready, timeout=60)
        png = client.get(avatar.themes[0].key_image, headers={"Authorization": ""})
        assert png.status_code == 200
        assert Image.open(io.BytesIO(png.content)).size == (PORTRAIT_SIDE, PORTRAIT_SIDE)


def test_the_sweeper_removes_build_photos_no_build_will_read(api, alice):
    waiting = started(api, alice, astronaut())
    done = started(api, alice, Image.fromarray(skimage_data.coffee()))
    ctx = api.ctx

    async def sweep_an_hour_on() -> list[str]:
        await ctx.files.put(build_photo_key("av_orphan"), b"left by a crash")
        await runs.claim(ctx, "wrk_test")  # the waiting build starts (its photo stays)
        behind_s = time.time() - ctx.clock.now_ms() / 1000  # files carry the real time
        api.clock.advance(behind_s + ABANDONED_PHOTO_MS / 1000 + 60)
        await ctx.store.end_avatar_build(done, "ERROR", "ended", None)
        await remove_abandoned_photos(ctx)
        return sorted(await ctx.files.stale("builds/", 2**62))

    with api.client.portal() as portal:
        assert portal.call(sweep_an_hour_on) == [build_photo_key(waiting)]
