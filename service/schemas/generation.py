"""Avatar generation bodies, and the status view (the answer to a status call, and the body of
the task's webhook), made from what `service.domain.generation_status` reads."""

from __future__ import annotations

import base64
from typing import Annotated

import msgspec

from service.domain import generation as domain
from service.domain.generation_status import GenerationState
from service.schemas.common import StrictBody
from service.schemas.tasks import TaskView, error_view, task_view_fields

Prompt = Annotated[str, msgspec.Meta(min_length=1, max_length=domain.MAX_PROMPT)]
Side = Annotated[int, msgspec.Meta(ge=domain.MIN_SIDE, le=domain.MAX_SIDE)]
Seed = Annotated[int, msgspec.Meta(ge=0, le=domain.MAX_SEED)]


class GenerationWebhook(StrictBody):
    url: str | None = None
    auth_token: str | None = None


class GenerationCreate(StrictBody):
    """`width`, `height` and `seed` given as null count as omitted."""

    prompt: Prompt
    width: Side | None = None
    height: Side | None = None
    seed: Seed | None = None
    webhook: GenerationWebhook | None = None


class GenerationStatus(TaskView, kw_only=True):
    """Every task's fields, then the generation's own. Optional keys are absent, not null,
    when they do not apply: hosted clients read a present `error` as a failure."""

    prompt: str
    width: int
    height: int
    seed: int
    avatar_id: str | msgspec.UnsetType = msgspec.UNSET  # once COMPLETED
    image: str | msgspec.UnsetType = msgspec.UNSET  # base64 PNG, while the avatar exists
    error: str | msgspec.UnsetType = msgspec.UNSET  # FAILED or TIMED_OUT: what went wrong
    error_code: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, state: GenerationState, base_url: str) -> GenerationStatus:
        """The view of the task's `state`; `base_url` starts the `status_url` link
        (AVATAR_PUBLIC_URL, else the scheme and host of the request)."""
        task, unset = state.task, msgspec.UNSET
        params, png = task.params, state.png
        error = error_view(task)  # the generation API shows its message as a string
        return cls(
            **task_view_fields(task, base_url, state.queue_position),
            prompt=params["prompt"],
            width=params["width"],
            height=params["height"],
            seed=params["seed"],
            avatar_id=(task.result or {}).get("avatar_id", unset),
            image=unset if png is None else base64.b64encode(png).decode("ascii"),
            error=unset if error is unset else error.message,
            error_code=unset if error is unset else error.code,
        )


class GenerationStatusEnvelope(msgspec.Struct):
    data: GenerationStatus
