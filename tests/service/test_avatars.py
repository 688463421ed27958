"""Avatars."""

from __future__ import annotations

import io

import pytest
from PIL import Image


def test_upload_png_list_get_and_public_image(api, alice, png_bytes):
    avatar = api.avatar(alice, png_bytes(40, 30), name="Face")
    assert avatar["width"] == 40 and avatar["height"] == 30
    assert avatar["source"] == "upload"
    assert avatar["name"] == "Face"
    assert avatar["avatar_id"].startswith("av_")
    assert api.get(f"/v1/avatars/{avatar['avatar_id']}", alice).json()["data"] == avatar
    listed = api.get("/v1/avatars", alice).json()["data"]["items"]
    assert [a["avatar_id"] for a in listed] == [avatar["avatar_id"]]
    public = api.get(f"/avatars/{avatar['avatar_id']}.png")
    assert public.status_code == 200
    assert public.headers["content-type"] == "image/png"
    assert "max-age" in public.headers["cache-control"]
    assert Image.open(io.BytesIO(public.content)).size == (40, 30)
    assert avatar["image_url"].endswith(f"/avatars/{avatar['avatar_id']}.png")


def test_jpeg_is_reencoded_as_png(api, alice, png_bytes):
    jpeg = png_bytes(64, 48, fmt="JPEG")
    avatar = api.avatar(alice, jpeg)
    served = api.get(f"/avatars/{avatar['avatar_id']}.png").content
    assert served != jpeg
    image = Image.open(io.BytesIO(served))
    assert image.format == "PNG" and image.size == (64, 48)


def test_png_with_alpha_keeps_it(api, alice, png_bytes):
    avatar = api.avatar(alice, png_bytes(8, 8, mode="RGBA"))
    image = Image.open(io.BytesIO(api.get(f"/avatars/{avatar['avatar_id']}.png").content))
    assert image.mode == "RGBA"


def _upload(api, auth, content: bytes | None, name=None, field="image"):
    files = {field: ("x.png", content, "image/png")} if content is not None else None
    data = {"name": name} if name is not None else None
    return api.post("/v1/avatars", auth, files=files, data=data)


@pytest.mark.parametrize(
    "content",
    [b"not an image", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, b"GIF89a" + b"\0" * 30, b""],
)
def test_non_images_are_refused(api, alice, content):
    response = _upload(api, alice, content)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == "image"


def test_gif_is_refused(api, alice, png_bytes):
    response = _upload(api, alice, png_bytes(8, 8, fmt="GIF"))
    assert response.status_code == 422


def test_truncated_png_is_refused(api, alice, png_bytes):
    data = png_bytes(200, 200)
    response = _upload(api, alice, data[: len(data) // 2])
    assert response.status_code == 422


def test_sides_over_4096_are_refused(api, alice):
    image = Image.new("L", (4097, 1))
    out = io.BytesIO()
    image.save(out, format="PNG")
    response = _upload(api, alice, out.getvalue())
    assert response.status_code == 422
    assert "4096" in response.json()["error"]["message"]


def test_missing_image_and_long_name(api, alice, png_bytes):
    assert _upload(api, alice, png_bytes(), field="picture").status_code == 422
    assert _upload(api, alice, png_bytes(), name="n" * 101).status_code == 422


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b'{"name": "Ada"}', "application/json", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (b"--b\r\nContent-Disposition: form-data; name=image\r\n\r\nab", None, 400, "BAD_REQUEST"),
    ],
    ids=["json", "truncated-multipart"],
)
def test_bodies_that_are_not_an_upload(api, alice, content, content_type, status, code):
    headers = alice | {"Content-Type": content_type or "multipart/form-data; boundary=b"}
    response = api.client.post("/v1/avatars", content=content, headers=headers)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_upload_over_10_mb_is_413(api, alice):
    response = _upload(api, alice, b"\0" * (10 * 1024 * 1024 + 70_000))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_delete_and_owner_isolation(api, alice, bob):
    avatar = api.avatar(alice)
    aid = avatar["avatar_id"]
    assert api.get(f"/v1/avatars/{aid}", bob).status_code == 404
    assert api.post(f"/v1/avatars/{aid}/delete", bob).status_code == 404
    assert api.get("/v1/avatars", bob).json()["data"]["items"] == []
    response = api.post(f"/v1/avatars/{aid}/delete", alice)
    assert response.status_code == 200
    assert response.json()["data"]["avatar_id"] == aid
    assert api.get(f"/v1/avatars/{aid}", alice).status_code == 404
    assert api.get(f"/avatars/{aid}.png").status_code == 404
    assert api.post(f"/v1/avatars/{aid}/delete", alice).status_code == 404


def test_public_image_is_shown_inline(api, alice, png_bytes):
    avatar = api.avatar(alice, png_bytes())
    response = api.get(f"/avatars/{avatar['avatar_id']}.png")
    assert response.headers["content-type"] == "image/png"
    disposition = response.headers["content-disposition"]
    assert disposition.startswith("inline") and f"{avatar['avatar_id']}.png" in disposition


def test_public_image_paths(api):
    assert api.get("/avatars/av_missing.png").status_code == 404
    assert api.get("/avatars/av_missing.jpg").status_code == 404


def test_hosted_paths_show_the_same_avatars(api, alice, bob):
    named = api.avatar(alice, name="Ada")
    api.clock.advance(1)
    unnamed = api.avatar(alice)
    listed = api.get("/v1/avatar/list", alice)
    assert listed.status_code == 200
    data = listed.json()["data"]
    assert [a["id"] for a in data] == [unnamed["avatar_id"], named["avatar_id"]]  # bare array
    one = api.get(f"/v1/avatar/{named['avatar_id']}", alice).json()["data"]
    assert one == data[1]
    assert set(one) == {
        "id", "user_id", "name", "created_at", "status", "supported_interactive_models", "themes"
    }  # fmt: skip
    assert one["name"] == "Ada" and data[0]["name"] == ""  # the hosted type requires a string
    assert one["created_at"] == named["created_at"]
    assert one["status"] == "READY"
    assert one["supported_interactive_models"] == ["metis-2.5"]
    assert one["themes"] == [{"name": "Default", "key_image": named["image_url"]}]
    assert api.get("/v1/avatar/list", bob).json()["data"] == []
    assert api.get(f"/v1/avatar/{named['avatar_id']}", bob).status_code == 404


def test_hosted_delete_is_204_without_a_body(api, alice, bob):
    avatar = api.avatar(alice)
    path = f"/v1/avatar/{avatar['avatar_id']}"
    assert api.call("DELETE", path, bob).status_code == 404
    deleted = api.call("DELETE", path, alice)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert api.get(f"/v1/avatars/{avatar['avatar_id']}", alice).status_code == 404
    assert api.get(f"/avatars/{avatar['avatar_id']}.png").status_code == 404
    assert api.call("DELETE", path, alice).status_code == 404


def test_hosted_avatar_id_does_not_swallow_its_siblings(api, alice):
    """`/v1/avatar/{id}` sits beside `/v1/avatar/list` and `/v1/avatar/async_generate...`."""
    assert api.get("/v1/avatar/list", alice).json() == {"data": []}
    assert api.call("DELETE", "/v1/avatar/list", alice).status_code == 405
    submitted = api.post("/v1/avatar/async_generate", alice, json={"prompt": "a sailor"})
    assert submitted.status_code == 200
    task_id = submitted.json()["data"]["task_id"]
    status = api.get(f"/v1/avatar/async_generate/{task_id}/status", alice)
    assert status.json()["data"]["task_id"] == task_id
    assert api.get("/v1/avatar/async_generate", alice).status_code == 405
    assert api.get("/v1/avatar/av_missing", alice).status_code == 404
