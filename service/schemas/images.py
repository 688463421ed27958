"""Image generation bodies (SPEC 14), in the hosted API's shapes: GenerateImageApiRequestBody
and AsyncGenerateImageApiRequestBody (`images` are LabeledImage), GenerateOutput, and the
task's status view (GenerateTaskOutput, with every task's fields beside it)."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

import msgspec

from service.domain import image_generation as domain
from service.domain.image_reads import ImageState
from service.schemas.common import StrictBody
from service.schemas.generation import GenerationWebhook
from service.schemas.tasks import TaskView, error_view, task_view_fields

Prompt = Annotated[str, msgspec.Meta(min_length=1, max_length=domain.MAX_PROMPT)]
# The ratios the size table knows (service.domain.image_generation.ASPECT_SIZES).
AspectRatio = Literal[tuple(domain.ASPECT_SIZES)]  # type: ignore[valid-type]
Seed = Annotated[int, msgspec.Meta(ge=0, le=domain.MAX_SEED)]
ImageLabel = Annotated[str, msgspec.Meta(max_length=domain.MAX_LABEL)]


class LabeledImage(StrictBody):
    """`data`: a data URL (`data:image/png;base64,...`) or bare base64 of a PNG, JPEG or WebP."""

    data: Annotated[str, msgspec.Meta(min_length=1)]
    label: ImageLabel | None = None


References = Annotated[list[LabeledImage], msgspec.Meta(max_length=domain.MAX_REFERENCES)]


class ImageCreate(StrictBody):
    """`images` and `seed` given as null count as omitted."""

    prompt: Prompt
    aspect_ratio: AspectRatio
    images: References | None = None
    seed: Seed | None = None

    def labeled(self) -> list[tuple[str, str | None]]:
        return [(image.data, image.label) for image in self.images or ()]


class ImageTaskCreate(ImageCreate, kw_only=True):
    webhook: GenerationWebhook | None = None

    def webhook_fields(self) -> tuple[str | None, str | None]:
        webhook = self.webhook or GenerationWebhook()
        return webhook.url, webhook.auth_token


class GenerateOutput(msgspec.Struct):
    image: str  # base64 JPEG

    @classmethod
    def of(cls, jpeg: bytes) -> GenerateOutput:
        return cls(base64.b64encode(jpeg).decode("ascii"))


class GenerateOutputEnvelope(msgspec.Struct):
    data: GenerateOutput


class ImageStatus(TaskView, kw_only=True):
    """Every task's fields, then the generation's own; `image` (base64 JPEG) once COMPLETED
    while it is kept, `error` as a string when it failed. Absent keys are absent, not null."""

    prompt: str
    aspect_ratio: str
    seed: int | None
    image: str | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET
    error_code: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, state: ImageState, base_url: str) -> ImageStatus:
        task, unset, jpeg = state.task, msgspec.UNSET, state.jpeg
        error = error_view(task)
        return cls(
            **task_view_fields(task, base_url, state.queue_position),
            prompt=task.params["prompt"],
            aspect_ratio=task.params["aspect_ratio"],
            seed=task.params["seed"],
            image=unset if jpeg is None else base64.b64encode(jpeg).decode("ascii"),
            error=unset if error is unset else error.message,
            error_code=unset if error is unset else error.code,
        )


class ImageStatusEnvelope(msgspec.Struct):
    data: ImageStatus
