"""Avatars (docs/api.md, "Avatars"): images the pages show, kept as PNG blobs in the file
store (uploads re-encoded, generated portraits as the generation task made them), with where
the face is in each (service.domain.faces), found when the avatar is stored."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec

from service.domain.context import Context
from service.domain.errors import NotFound, TaskFinished, ValidationFailed, echo
from service.domain.faces import FaceLandmarks
from service.domain.files import FileStore, avatar_key, build_photo_key, image_upload_key
from service.domain.images import EncodedImage, reencode_png
from service.domain.models import Avatar, Task
from service.domain.ownership import require_owned
from service.domain.pagination import MAX_UNPAGED, UNPAGED, PageRequest, Position, next_cursor
from service.domain.tasks import IN_PROGRESS, cancel
from service.domain.text import check_display_text

MAX_NAME = 100
# An avatar's status (SPEC 14): uploads and generated portraits are READY at once; one built
# from a photo is PENDING while its build waits, BUILDING while it runs (shown, not stored: its
# build task says so), then READY or ERROR.
PENDING, BUILDING, READY, ERROR = "PENDING", "BUILDING", "READY", "ERROR"
BUILD_KIND = "avatar_build"


def build_task_id(avatar_id: str) -> str:
    """The id of an avatar's build task: the avatar's own random part (one build each)."""
    return "tsk_" + avatar_id.removeprefix("av_")


async def as_shown(ctx: Context, avatar: Avatar) -> Avatar:
    """`avatar` with the status a reader sees: BUILDING while a worker runs its build."""
    if avatar.status != PENDING:
        return avatar
    task = await ctx.store.get_task(build_task_id(avatar.avatar_id))
    if task is None or task.status != IN_PROGRESS:
        return avatar
    return msgspec.structs.replace(avatar, status=BUILDING)


def check_name(name: str | None) -> str | None:
    if name is not None and not 1 <= len(name) <= MAX_NAME:
        raise ValidationFailed.field("name", f"must be 1 to {MAX_NAME} characters")
    check_display_text("name", name)
    return name


def _read_stored(files: FileStore, key: str) -> bytes:
    with files.local_copy(key) as path:
        return path.read_bytes()


def _reencode_stored(files: FileStore, key: str) -> EncodedImage:
    return reencode_png(_read_stored(files, key))


async def upload_avatar(ctx: Context, owner_id: str, avatar_id: str, name: str | None) -> Avatar:
    """Make avatar `avatar_id` of the image uploaded for it (under `image_upload_key`),
    decoded and re-encoded as PNG; the upload itself is removed whatever happens."""
    key = image_upload_key(avatar_id)
    try:
        name = check_name(name or None)
        # Fetching, decoding and encoding block: keep them off the event loop.
        encoded = await asyncio.to_thread(_reencode_stored, ctx.files, key)
    finally:
        await ctx.files.delete(key)
    face = await find_face(ctx, encoded.png)
    avatar = Avatar(
        avatar_id, owner_id, name, encoded.width, encoded.height, "upload", ctx.clock.now_ms(),
        face, face_checked=True,
    )  # fmt: skip
    return await add_avatar(ctx, avatar, encoded.png)


async def find_face(ctx: Context, png: bytes) -> FaceLandmarks | None:
    """The largest face of an image the service made (None: it has none)."""
    # Finding faces is CPU work: off the event loop.
    faces = await asyncio.to_thread(ctx.faces.find, png)
    return faces[0] if faces else None


async def avatar_face(ctx: Context, avatar: Avatar) -> FaceLandmarks | None:
    """Where `avatar`'s face is. Avatars stored before faces were looked for have it found
    now, once, and kept: a page's first view pays for it."""
    if avatar.face_checked:
        return avatar.face
    try:
        png = await asyncio.to_thread(_read_stored, ctx.files, avatar_key(avatar.avatar_id))
    except OSError:
        return None  # deleted meanwhile (or the file store is down: looked for next time)
    try:
        face = await find_face(ctx, png)
    except ValueError:
        face = None  # a stored image the finder cannot read has no face to animate
    await ctx.store.set_avatar_face(avatar.avatar_id, face)
    return face


async def add_avatar(ctx: Context, avatar: Avatar, png: bytes) -> Avatar:
    """Keep `avatar` with `png` as its image (a PNG the service made itself)."""
    # The file is in place before the record exists, so a listed avatar always has its image.
    await ctx.files.put(avatar_key(avatar.avatar_id), png)
    await ctx.store.add_avatar(avatar)
    return avatar


async def owned_avatar(ctx: Context, owner_id: str, avatar_id: str) -> Avatar:
    avatar = await ctx.store.get_avatar(avatar_id)
    return await as_shown(ctx, require_owned(avatar, owner_id, "avatar", avatar_id))


async def list_avatars(
    ctx: Context, owner_id: str, page: PageRequest
) -> tuple[list[Avatar], str | None]:
    rows = await ctx.store.list_avatars(owner_id, page)
    rows = [await as_shown(ctx, avatar) for avatar in rows]
    return next_cursor(rows, page.limit, lambda a: Position(a.created_ms, a.avatar_id))


async def newest_avatars(ctx: Context, owner_id: str) -> list[Avatar]:
    """The caller's newest avatars (at most MAX_UNPAGED), for an answer without a cursor."""
    newest = (await ctx.store.list_avatars(owner_id, UNPAGED))[:MAX_UNPAGED]
    return [await as_shown(ctx, avatar) for avatar in newest]


async def avatar_names(ctx: Context, avatar_ids: list[str]) -> dict[str, str | None]:
    """The name of each avatar of `avatar_ids` that still exists (None when it has none)."""
    found = await ctx.store.get_avatars(list(dict.fromkeys(avatar_ids)))
    return {avatar.avatar_id: avatar.name for avatar in found}


async def delete_avatar(ctx: Context, owner_id: str, avatar_id: str) -> Avatar:
    avatar = await ctx.store.delete_avatar(owner_id, avatar_id)
    if avatar is None:
        raise NotFound(f"No avatar {echo(avatar_id)}.")
    await ctx.files.delete(avatar_key(avatar_id))
    if avatar.status == PENDING:
        await _stop_build(ctx, owner_id, avatar_id)
    return avatar


class _StoppedBuild:
    """What cancelling a deleted avatar's waiting build removes: its photo (a running build's
    worker stops within its heartbeat and removes it itself)."""

    name = BUILD_KIND

    async def discard(self, ctx: Context, task: Task) -> None:
        await ctx.files.delete(build_photo_key(task.params["avatar_id"]))


async def _stop_build(ctx: Context, owner_id: str, avatar_id: str) -> None:
    with contextlib.suppress(NotFound, TaskFinished):
        await cancel(ctx, owner_id, build_task_id(avatar_id), _StoppedBuild())


async def find_avatar(ctx: Context, avatar_id: str) -> Avatar | None:
    """Any owner's avatar by id (public: pages show its name and image)."""
    return await ctx.store.get_avatar(avatar_id)


async def has_image(ctx: Context, avatar_id: str) -> bool:
    return await ctx.files.size(avatar_key(avatar_id)) is not None


async def public_avatar_png(ctx: Context, avatar_id: str) -> tuple[str, int]:
    """The file key and size of any avatar's PNG (public: pages show it without a key)."""
    key = avatar_key(avatar_id)
    avatar = await ctx.store.get_avatar(avatar_id)
    # A built avatar's image is there only once READY (and an ERROR one has none).
    ready = avatar is not None and avatar.status == READY
    size = await ctx.files.size(key) if ready else None
    if size is None:
        raise NotFound(f"No avatar {echo(avatar_id)}.")
    return key, size
