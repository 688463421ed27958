"""Avatars built from a photo (`POST /v1/avatar/async_build`, SPEC 14): the photo is decoded,
its one face found (`FaceFinder`), and the face cropped and aligned into the portrait format
the pages use (`service.domain.portraits`), with its points kept.

To the API a build is not a task: the avatar carries its state, PENDING, then BUILDING, then
READY or ERROR with `error` saying why. Underneath it runs as a task of kind `avatar_build`
(never listed or shown), so it has what every task has: it runs in a task worker's process,
waits in the owner's queue (AVATAR_QUEUE_LIMIT), answers a repeated Idempotency-Key with the
avatar first made, and survives restarts: a build whose worker died runs again, at most
twice, then the avatar ends in ERROR saying so. Nothing is left PENDING for ever."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from service.domain import avatars
from service.domain.avatars import ERROR, PENDING, READY, build_task_id
from service.domain.context import Context
from service.domain.errors import PayloadTooLarge, ServiceError, ValidationFailed
from service.domain.faces import FaceFinder, FaceLandmarks
from service.domain.files import BUILD_PHOTOS, avatar_key, build_photo_key
from service.domain.ids import new_id
from service.domain.images import (
    MAX_IMAGE_BYTES,
    MAX_IMAGE_SIDE,
    MEDIA_FORMATS,
    decode_image,
)
from service.domain.models import Avatar, IdempotencyKey, Task
from service.domain.portraits import PORTRAIT_SIDE, align
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED, new_task, submit

KIND = avatars.BUILD_KIND
# A face narrower than this (in the photo's pixels) is too small to make a portrait of.
MIN_FACE_PX = 80
# A second face at least this share of the largest one's width makes the photo ambiguous;
# smaller ones (people far behind) are ignored.
OTHER_FACE_SHARE = 0.5
_BASE64_LIMIT = (MAX_IMAGE_BYTES + 2) // 3 * 4 + 4  # a 10 MB image, base64 (and padding)


def _decoded(image: str) -> bytes:
    if len(image) > _BASE64_LIMIT:
        raise PayloadTooLarge(f"The image is larger than the {MAX_IMAGE_BYTES} bytes allowed.")
    try:
        return base64.b64decode(image, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed.field("image", "must be base64 (the image's bytes)") from None


def _check_header(data: bytes) -> None:
    """Refuse at once what is surely no usable photo (the format and size its header
    declares); decoding it whole is the build's work."""
    if len(data) > MAX_IMAGE_BYTES:
        raise PayloadTooLarge(f"The image is {len(data)} bytes; at most {MAX_IMAGE_BYTES} allowed.")
    try:
        with Image.open(io.BytesIO(data), formats=MEDIA_FORMATS) as image:
            width, height = image.size
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
        raise ValidationFailed.field("image", "must be a PNG, JPEG or WebP image") from None
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        message = f"is {width}x{height}; each side must be at most {MAX_IMAGE_SIDE} px"
        raise ValidationFailed.field("image", message)


@dataclass(frozen=True)
class BuildRequest:
    name: str
    photo: bytes


def check_request(image: str, name: str) -> BuildRequest:
    photo = _decoded(image)
    _check_header(photo)
    return BuildRequest(avatars.check_name(name) or "", photo)


def fingerprint(request: BuildRequest) -> str:
    return hashlib.sha256(b"%s\0%s" % (request.name.encode(), request.photo)).hexdigest()


async def submit_build(
    ctx: Context, owner_id: str, request: BuildRequest, idempotency: IdempotencyKey | None
) -> str:
    """The id of the avatar being built (PENDING), or of the one an earlier submission with
    the same Idempotency-Key made. The avatar exists before its build is queued, so a worker
    always finds it; both go again when the build cannot be queued."""
    avatar_id = new_id("av")
    now = ctx.clock.now_ms()
    avatar = Avatar(
        avatar_id, owner_id, request.name, PORTRAIT_SIDE, PORTRAIT_SIDE, "upload", now,
        status=PENDING,
    )  # fmt: skip
    await ctx.files.put(build_photo_key(avatar_id), request.photo)
    await ctx.store.add_avatar(avatar)
    task = new_task(build_task_id(avatar_id), owner_id, KIND, {"avatar_id": avatar_id}, now)
    try:
        stored = await submit(ctx, task, idempotency)
    except BaseException:
        await _forget(ctx, owner_id, avatar_id)
        raise
    if stored.task_id != task.task_id:
        await _forget(ctx, owner_id, avatar_id)
    return stored.params["avatar_id"]


async def _forget(ctx: Context, owner_id: str, avatar_id: str) -> None:
    await ctx.store.delete_avatar(owner_id, avatar_id)
    await ctx.files.delete(build_photo_key(avatar_id))


def one_face(faces: list[FaceLandmarks]) -> FaceLandmarks:
    """The photo's one face; TaskFailed saying what is wrong when there is none, more than
    one, or it is too small."""
    if not faces:
        raise TaskFailed(
            "NO_FACE",
            "No face was found in the image: send a photo of one face, seen from the front.",
        )
    largest = faces[0]
    others = [f for f in faces[1:] if f.width >= OTHER_FACE_SHARE * largest.width]
    if others:
        raise TaskFailed(
            "SEVERAL_FACES",
            f"{len(others) + 1} faces were found in the image: send a photo of one person.",
        )
    if largest.width < MIN_FACE_PX:
        raise TaskFailed(
            "FACE_TOO_SMALL",
            f"The face is {largest.width:.0f} px wide, too small for a portrait (at least "
            f"{MIN_FACE_PX} px is needed): send a closer or larger photo.",
        )
    return largest


@dataclass(frozen=True)
class Built:
    png: bytes
    face: FaceLandmarks


class AvatarBuild:
    """The task kind: decode, find the face and align it in the worker's thread; the avatar
    becomes READY on completion, ERROR when the build ends any other way."""

    name = KIND

    def __init__(self, faces: FaceFinder) -> None:
        self._faces = faces

    def run(self, job: Job) -> Built:
        with job.files.local_copy(build_photo_key(job.task.params["avatar_id"])) as path:
            data = path.read_bytes()
        job.report("decoding", 0.1)
        try:
            photo = decode_image(data, formats=MEDIA_FORMATS).convert("RGB")
        except ServiceError as exc:
            raise TaskFailed("INVALID_IMAGE", exc.message) from None
        if job.cancel.is_set():
            raise Stopped
        job.report("finding the face", 0.3)
        face = one_face(self._faces.find(data))
        if job.cancel.is_set():
            raise Stopped
        job.report("aligning", 0.8)
        png, placed = align(photo, face)
        return Built(png, placed)

    async def complete(self, ctx: Context, task: Task, output: Built) -> Completion:
        avatar_id = task.params["avatar_id"]
        # The image is in place before the avatar turns READY (a READY avatar has its image).
        await ctx.files.put(avatar_key(avatar_id), output.png)
        if not await ctx.store.end_avatar_build(avatar_id, READY, None, output.face):
            await ctx.files.delete(avatar_key(avatar_id))  # deleted meanwhile
        return Completion({"avatar_id": avatar_id})

    async def discard(self, ctx: Context, task: Task) -> None:
        avatar_id = task.params["avatar_id"]
        await ctx.files.delete(build_photo_key(avatar_id))
        if task.status != COMPLETED:
            error = task.error.message if task.error else "The build was stopped."
            await ctx.store.end_avatar_build(avatar_id, ERROR, error, None)


# A build's photo not written to for this long whose avatar is not PENDING was left behind
# (a process died between storing it and storing its avatar, or after its build ended).
ABANDONED_PHOTO_MS = 3600 * 1000


async def remove_abandoned_photos(ctx: Context) -> None:
    """The sweeper's part: build photos that no waiting build will read."""
    stale = await ctx.files.stale(BUILD_PHOTOS, ctx.clock.now_ms() - ABANDONED_PHOTO_MS)
    for key in stale:
        avatar_id = key.rpartition("/")[2].partition(".")[0]
        avatar = await ctx.store.get_avatar(avatar_id)
        if avatar is None or avatar.status != PENDING:
            await ctx.files.delete(key)
