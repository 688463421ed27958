"""Avatars keep where their face is: uploads from the face finder, generated portraits from
the generator, and avatars stored before faces were looked for have theirs found on first use
(and kept). The finder's own accuracy is tests/service/test_faces.py's."""

from __future__ import annotations

import html
import io

import msgspec
import pytest
from PIL import Image

from service.domain.avatars import avatar_face
from service.domain.faces import FaceLandmarks
from service.domain.files import avatar_key
from service.domain.models import Avatar
from service.generators.procedural import ProceduralPortraits
from tests.service.test_generation import run_next_task, status_path, submit
from tests.service.test_pages import parse

skimage_data = pytest.importorskip("skimage.data")


def astronaut_png() -> bytes:
    out = io.BytesIO()
    Image.fromarray(skimage_data.astronaut()).save(out, format="PNG")
    return out.getvalue()


def stored(api, avatar_id: str) -> Avatar:
    with api.client.portal() as portal:
        return portal.call(api.ctx.store.get_avatar, avatar_id)


def test_an_uploaded_photo_keeps_the_face_found_in_it(api, alice, png_bytes):
    photo = stored(api, api.avatar(alice, astronaut_png())["avatar_id"])
    assert photo.face_checked and photo.face is not None
    assert photo.face.method == "box"
    assert 180 < photo.face.mouth.x < 260 and 120 < photo.face.mouth.y < 170
    faceless = stored(api, api.avatar(alice, png_bytes(64, 48))["avatar_id"])
    assert faceless.face_checked and faceless.face is None


def test_a_generated_portrait_keeps_the_generators_points(api, alice):
    task = submit(api, alice, width=320, height=256, seed=42)
    assert run_next_task(api)
    avatar_id = api.get(status_path(task["task_id"]), alice).json()["data"]["avatar_id"]
    avatar = stored(api, avatar_id)
    assert avatar.face_checked
    assert avatar.face == ProceduralPortraits().face("a sailor", 320, 256, 42)


def test_an_avatar_stored_before_faces_has_its_face_found_on_first_use(api, alice):
    owner_id = stored(api, api.avatar(alice)["avatar_id"]).owner_id
    older = Avatar("av_older", owner_id, None, 512, 512, "upload", 1)  # no face looked for

    async def store_and_look() -> tuple:
        await api.ctx.files.put(avatar_key(older.avatar_id), astronaut_png())
        await api.ctx.store.add_avatar(older)
        first = await avatar_face(api.ctx, older)
        kept = await api.ctx.store.get_avatar(older.avatar_id)
        return first, kept

    with api.client.portal() as portal:
        first, kept = portal.call(store_and_look)
    assert first is not None and first.method == "box"
    assert kept.face_checked and kept.face == first


def test_the_page_carries_the_face_for_its_canvas(api, alice, png_bytes):
    def canvas_face(image: bytes) -> str:
        avatar_id = api.avatar(alice, image)["avatar_id"]
        route = api.route(alice, api.agent(alice, avatar_id=avatar_id)["agent_id"])
        return parse(api.get(f"/r/{route['id']}").text).data["data-face"]

    face = msgspec.json.decode(html.unescape(canvas_face(astronaut_png())), type=FaceLandmarks)
    assert face.method == "box"
    assert canvas_face(png_bytes(64, 48)) == ""  # no face: the page shows the speaking ring
