"""The avatar generation task: a portrait rendered from a prompt and a seed by a `Generator`,
registered as an avatar (`source="generated"`) when the task completes.

The seed makes a generation reproducible: one chosen at random when the request has none is
stored with the task (and shown by its status). The avatar's id is chosen at submission too,
so whatever a run leaves behind can be found and removed however the run ends."""

from __future__ import annotations

import hashlib
import io
import json
import secrets
from dataclasses import dataclass
from typing import Protocol

from PIL import Image, UnidentifiedImageError

from service.domain.avatars import add_avatar, find_face
from service.domain.context import Context
from service.domain.faces import FaceLandmarks
from service.domain.files import avatar_key
from service.domain.ids import new_id
from service.domain.models import Avatar, IdempotencyKey, Task, WebhookTarget
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED, new_task, submit
from service.domain.webhooks import check_target

KIND = "avatar_generation"
# Request limits (the request body's schema enforces them with these values).
MAX_PROMPT = 2000
MIN_SIDE, MAX_SIDE, DEFAULT_SIDE = 256, 1024, 512
MAX_SEED = 2**63 - 1
# A generated avatar is named after its prompt, cut to the longest avatar name.
_NAME_LENGTH = 100


class Generator(Protocol):
    """Makes the image of a generation; a model-backed generator can replace the built-in
    procedural one (`service.generators.procedural`)."""

    def render(self, prompt: str, width: int, height: int, seed: int) -> bytes:
        """A PNG of exactly `width` x `height` pixels; the same arguments give the same bytes."""
        ...

    def face(self, prompt: str, width: int, height: int, seed: int) -> FaceLandmarks | None:
        """Where `render` draws the face (method "generator"), or None when the generator
        cannot say (the face finder looks at the image instead)."""
        ...


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    width: int
    height: int
    seed: int | None  # None: one is drawn at submission
    webhook: WebhookTarget | None


def check_request(
    ctx: Context,
    prompt: str,
    width: int,
    height: int,
    seed: int | None,
    webhook_url: str | None,
    webhook_token: str | None,
    links_base: str,
) -> GenerationRequest:
    """The request with its webhook checked (types and ranges are the body decoder's job);
    `links_base` starts the links of the answers (and of the webhook's body)."""
    webhook = check_target(
        webhook_url,
        webhook_token,
        allow_private=ctx.settings.webhook_allow_private,
        url_field="webhook.url",
        token_field="webhook.auth_token",
        links_base=links_base,
    )
    return GenerationRequest(prompt, width, height, seed, webhook)


def fingerprint(request: GenerationRequest) -> str:
    """What makes two submissions the same request (for Idempotency-Key): the request with
    its defaults filled in, so an omitted size and the default size are the same."""
    webhook = request.webhook
    canonical = {
        "prompt": request.prompt,
        "width": request.width,
        "height": request.height,
        "seed": request.seed,
        "webhook": None if webhook is None else [webhook.url, webhook.token],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


async def submit_generation(
    ctx: Context, owner_id: str, request: GenerationRequest, idempotency: IdempotencyKey | None
) -> Task:
    """Queue a generation, or return the task an earlier submission with the same
    Idempotency-Key created."""
    params = {
        "prompt": request.prompt,
        "width": request.width,
        "height": request.height,
        "seed": secrets.randbelow(MAX_SEED + 1) if request.seed is None else request.seed,
        "avatar_id": new_id("av"),
    }
    task = new_task(new_id("tsk"), owner_id, KIND, params, ctx.clock.now_ms(), request.webhook)
    return await submit(ctx, task, idempotency)


def _check_png(png: bytes, width: int, height: int) -> None:
    """The generator kept its promise: a PNG of the size asked for."""
    try:
        size = Image.open(io.BytesIO(png), formats=("PNG",)).size
    except (UnidentifiedImageError, OSError, ValueError):
        raise TaskFailed("GENERATION_FAILED", "The generator did not produce a PNG.") from None
    if size != (width, height):
        message = f"The generator made a {size[0]}x{size[1]} image, not {width}x{height}."
        raise TaskFailed("GENERATION_FAILED", message)


async def _remove_avatar(ctx: Context, task: Task) -> None:
    avatar_id = task.params["avatar_id"]
    if await ctx.store.delete_avatar(task.owner_id, avatar_id) is not None:
        await ctx.files.delete(avatar_key(avatar_id))


class Generation:
    """The task kind: render in the worker's thread, register the avatar on completion."""

    name = KIND

    def __init__(self, generator: Generator) -> None:
        self._generator = generator

    def run(self, job: Job) -> tuple[bytes, FaceLandmarks | None]:
        params = job.task.params
        width, height = params["width"], params["height"]
        if job.cancel.is_set():
            raise Stopped
        job.report("rendering", 0.1)
        png = self._generator.render(params["prompt"], width, height, params["seed"])
        if job.cancel.is_set():
            raise Stopped
        job.report("checking", 0.9)
        _check_png(png, width, height)
        return png, self._generator.face(params["prompt"], width, height, params["seed"])

    async def complete(
        self, ctx: Context, task: Task, output: tuple[bytes, FaceLandmarks | None]
    ) -> Completion:
        params, (png, face) = task.params, output
        avatar_id = params["avatar_id"]
        # A run whose worker died after this point, and ran again, finds its avatar here.
        if await ctx.store.get_avatar(avatar_id) is None:
            name = " ".join(params["prompt"].split())[:_NAME_LENGTH] or None
            face = face or await find_face(ctx, png)
            avatar = Avatar(
                avatar_id, task.owner_id, name, params["width"], params["height"], "generated",
                ctx.clock.now_ms(), face, face_checked=True,
            )  # fmt: skip
            await add_avatar(ctx, avatar, png)
        return Completion({"avatar_id": avatar_id})

    async def discard(self, ctx: Context, task: Task) -> None:
        if task.status != COMPLETED:
            await _remove_avatar(ctx, task)
