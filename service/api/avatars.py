"""Avatars: /v1/avatars and the public /avatars/{avatar_id}.png."""

from __future__ import annotations

from litestar import Controller, Request
from litestar.types import ASGIApp

from service.api.blobs import BlobResponse
from service.api.context import ctx_of, owner_of, public_base
from service.api.openapi import delete, error_responses, file_download, get, post
from service.api.params import Cursor, Limit, RangeHeader
from service.api.upload import UploadForm, body_limit, multipart_body, receive_upload
from service.domain import avatars as domain
from service.domain.errors import NotFound
from service.domain.files import image_upload_key
from service.domain.ids import new_id
from service.domain.images import MAX_IMAGE_BYTES
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.avatars import (
    Avatar,
    AvatarEnvelope,
    AvatarPage,
    AvatarPageEnvelope,
)
from service.schemas.compat import HostedAvatar, HostedAvatarEnvelope, HostedAvatarListEnvelope

_IMAGE = UploadForm("image", "the image", ("name",), MAX_IMAGE_BYTES)
_FORM = multipart_body(
    "image",
    "A PNG or JPEG image of at most 10 MiB and 4096 px a side.",
    {"name": "The avatar's name (1 to 100 characters)."},
)
_CACHE = "public, max-age=3600"


class AvatarsController(Controller):
    path = "/avatars"
    tags = ("avatars",)

    @post(
        status_code=201,
        request_max_body_size=body_limit(MAX_IMAGE_BYTES),
        operation_class=_FORM,
        responses=error_responses(415, 507),
    )
    async def upload_avatar(self, request: Request) -> AvatarEnvelope:
        ctx, avatar_id = ctx_of(request), new_id("av")
        upload = await receive_upload(request, ctx.files, image_upload_key(avatar_id), _IMAGE)
        name = upload.fields.get("name")
        avatar = await domain.upload_avatar(ctx, owner_of(request), avatar_id, name)
        return AvatarEnvelope(Avatar.of(avatar, public_base(request)))

    @get()
    async def list_avatars(
        self, request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
    ) -> AvatarPageEnvelope:
        page = page_request(limit, cursor)
        avatars, next_cursor = await domain.list_avatars(ctx_of(request), owner_of(request), page)
        base = public_base(request)
        return AvatarPageEnvelope(AvatarPage([Avatar.of(a, base) for a in avatars], next_cursor))

    @get("/{avatar_id:str}")
    async def get_avatar(self, request: Request, avatar_id: str) -> AvatarEnvelope:
        avatar = await domain.owned_avatar(ctx_of(request), owner_of(request), avatar_id)
        return AvatarEnvelope(Avatar.of(avatar, public_base(request)))

    @post("/{avatar_id:str}/delete", status_code=200)
    async def delete_avatar(self, request: Request, avatar_id: str) -> AvatarEnvelope:
        avatar = await domain.delete_avatar(ctx_of(request), owner_of(request), avatar_id)
        return AvatarEnvelope(Avatar.of(avatar, public_base(request)))


class HostedAvatarsController(Controller):
    """The hosted API's avatar paths, over the same avatars. `/list` is a static segment, which
    Litestar matches before `/{avatar_id}`; the async_generate paths are deeper or POST."""

    path = "/avatar"
    tags = ("avatars",)

    @get("/list")
    async def list_avatars_hosted(self, request: Request) -> HostedAvatarListEnvelope:
        ctx = ctx_of(request)
        avatars = await domain.newest_avatars(ctx, owner_of(request))
        base = public_base(request)
        return HostedAvatarListEnvelope(
            [HostedAvatar.of(a, ctx.settings.models, base) for a in avatars]
        )

    @get("/{avatar_id:str}")
    async def get_avatar_hosted(self, request: Request, avatar_id: str) -> HostedAvatarEnvelope:
        ctx = ctx_of(request)
        avatar = await domain.owned_avatar(ctx, owner_of(request), avatar_id)
        return HostedAvatarEnvelope(
            HostedAvatar.of(avatar, ctx.settings.models, public_base(request))
        )

    @delete("/{avatar_id:str}", status_code=204)
    async def delete_avatar_hosted(self, request: Request, avatar_id: str) -> None:
        await domain.delete_avatar(ctx_of(request), owner_of(request), avatar_id)


@get(
    "/avatars/{file_name:str}",
    tags=["public"],
    summary="Avatar image (PNG, no key)",
    operation_class=file_download("image/png"),
    responses=error_responses(416),
)
async def avatar_png(request: Request, file_name: str, byte_range: RangeHeader = None) -> ASGIApp:
    """The avatar's PNG, public so pages can show it; the id is unguessable."""
    avatar_id, dot, extension = file_name.rpartition(".")
    if not dot or extension != "png":
        raise NotFound("Avatar images are served as /avatars/{avatar_id}.png.")
    ctx = ctx_of(request)
    key, size = await domain.public_avatar_png(ctx, avatar_id)
    headers = {
        "Cache-Control": _CACHE,
        # Shown by a browser, not downloaded.
        "Content-Disposition": f'inline; filename="{avatar_id}.png"',
    }
    return BlobResponse(ctx.files, key, size, "image/png", byte_range, headers)
