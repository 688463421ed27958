"""An upscale submission, from its query to its queued task, as a pair around the streamed
upload: `begin_upscale` before the body is read (the resolution), then the upload writes the
video under `UpscaleSubmission.upload_key`, judging the webhook as soon as it can
(`file_starts`), then `accept` inspects the video and queues the task. Each check runs once."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from service.domain.context import Context
from service.domain.files import upload_key
from service.domain.ids import new_id
from service.domain.models import IdempotencyKey, Task, WebhookTarget
from service.domain.tasks import new_task, submit
from service.domain.upscale import KIND
from service.domain.upscale.checks import (
    WEBHOOK_TOKEN,
    WEBHOOK_URL,
    check_filter,
    check_resolution,
    check_webhook,
    inspect_upload,
)


def begin_upscale(
    ctx: Context, owner_id: str, resolution: str | None, links_base: str
) -> UpscaleSubmission:
    """A submission whose resolution is checked, with the id its task will have. `links_base`
    starts the links of the answers (and of the webhook's body)."""
    return UpscaleSubmission(ctx, owner_id, check_resolution(resolution), links_base)


class UpscaleSubmission:
    def __init__(self, ctx: Context, owner_id: str, resolution: str, links_base: str) -> None:
        self._ctx, self._owner_id, self._links_base = ctx, owner_id, links_base
        self.resolution = resolution
        self.task_id = new_id("tsk")
        # The webhook fields judged so far, and what they named.
        self._judged: tuple[str | None, str | None] | None = None
        self._webhook: WebhookTarget | None = None

    @property
    def upload_key(self) -> str:
        """Where the upload writes the video."""
        return upload_key(self.task_id)

    def file_starts(self, fields: Mapping[str, str]) -> None:
        """The file part begins after the text parts `fields`: a webhook URL among them is
        judged now, so a bad one is refused before the video is read."""
        if WEBHOOK_URL in fields:
            self._webhook_of(fields)

    async def accept(
        self, fields: Mapping[str, str], upload_digest: str | None, idempotency_key: str | None
    ) -> Task:
        """The uploaded video inspected and its upscale queued (an earlier task when this
        repeats an idempotent submission); the upload is removed when it is refused or not
        needed. `fields` are all the form's text fields; `upload_digest` (the video's SHA-256)
        is needed only with an `idempotency_key`."""
        ctx = self._ctx
        try:
            webhook = self._webhook_of(fields)
            filter = check_filter(ctx, fields)
            facts = await inspect_upload(ctx, self.task_id, self.resolution)
            params = {"resolution": self.resolution, "filter": filter, "input_key": self.upload_key}
            task = new_task(
                self.task_id, self._owner_id, KIND, params, ctx.clock.now_ms(), webhook,
                input=facts,
            )  # fmt: skip
            idempotency = None
            if idempotency_key is not None:
                digest = _fingerprint(self.resolution, filter, webhook, upload_digest or "")
                idempotency = IdempotencyKey(idempotency_key, digest)
            stored = await submit(ctx, task, idempotency)
        except BaseException:
            await ctx.files.delete(self.upload_key)
            raise
        if stored.task_id != self.task_id:  # a repeat: the first task stands
            await ctx.files.delete(self.upload_key)
        return stored

    def _webhook_of(self, fields: Mapping[str, str]) -> WebhookTarget | None:
        # Judged again only when a webhook field came after the file part.
        judged = (fields.get(WEBHOOK_URL), fields.get(WEBHOOK_TOKEN))
        if judged != self._judged:
            self._webhook = check_webhook(self._ctx, fields, self._links_base)
            self._judged = judged
        return self._webhook


def _fingerprint(
    resolution: str, filter: str, webhook: WebhookTarget | None, upload_digest: str
) -> str:
    """What makes two submissions the same request (for Idempotency-Key)."""
    parts: list[Any] = [resolution, filter, upload_digest]
    if webhook is not None:
        parts += [webhook.url, webhook.token or ""]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
