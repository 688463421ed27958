"""The voice clone task (SPEC 14): an owner's samples, measured and matched onto the nearest
built-in voice (pitch level and range, speaking rate), become a voice profile when the task
completes. It is a matched voice, not a neural clone (docs/api.md says so).

The samples are stored as they are uploaded (under the task's id, chosen first); the run reads
them in its worker, decodes each (any format FFmpeg reads) and hands them to a `VoiceMatcher`.
The profile's id is chosen at submission, so a run that is repeated finds its profile."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol

import engine
from service.domain.context import Context
from service.domain.errors import ValidationFailed
from service.domain.files import UPLOADS
from service.domain.ids import new_id
from service.domain.models import IdempotencyKey, Task, VoiceProfile, WebhookTarget
from service.domain.speech import STT_SAMPLE_RATE, MatchedVoice
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import new_task, submit
from service.domain.webhooks import check_target

KIND = "voice_clone"
MIN_SAMPLES, MAX_SAMPLES = 6, 20
MAX_SAMPLE_BYTES = 10 * 1024 * 1024
MAX_SAMPLE_S = 60.0
MAX_ANNOTATIONS_BYTES = 256 * 1024
MIN_NAME, MAX_NAME, MAX_DESCRIPTION = 3, 64, 512
# The form's parts, as the hosted API names them.
SAMPLES, ANNOTATIONS = "audio_samples", "annotation_list"
TEXT_FIELDS = ("name", "description", "clean_data", "webhook", "webhook_auth")


def sample_key(task_id: str, index: int) -> str:
    # Flat beside other uploads, named by the task: the sweeper removes abandoned ones.
    return f"{UPLOADS}{task_id}.sample-{index:02d}"


class VoiceMatcher(Protocol):
    """Finds the built-in voice and settings nearest to a speaker
    (`service.generators.voice_match`)."""

    def match(self, samples: list[tuple[bytes, str]]) -> MatchedVoice:
        """`samples` are (16-bit mono PCM at STT_SAMPLE_RATE, what is said); raises
        ValueError when they cannot be measured (too little voiced speech)."""
        ...


@dataclass(frozen=True)
class StoredSample:
    key: str
    file_name: str
    sha256: str


@dataclass(frozen=True)
class CloneRequest:
    name: str
    description: str | None
    samples: list[tuple[StoredSample, str]]  # each with its annotation
    webhook: WebhookTarget | None


def _annotations(text: bytes) -> dict[str, str]:
    """`annotation_list`: one `file name|text` a line (blank lines skipped)."""
    try:
        lines = text.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise ValidationFailed.field(ANNOTATIONS, "must be UTF-8 text") from None
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        name, bar, said = line.partition("|")
        if not bar or not name.strip() or not said.strip():
            message = f"line {number} is not `file name|text`"
            raise ValidationFailed.field(ANNOTATIONS, message)
        found[name.strip()] = said.strip()
    return found


def _check_name(name: str | None, description: str | None) -> None:
    if name is not None and not MIN_NAME <= len(name) <= MAX_NAME:
        raise ValidationFailed.field("name", f"must be {MIN_NAME} to {MAX_NAME} characters")
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise ValidationFailed.field("description", f"must be at most {MAX_DESCRIPTION} characters")


def check_request(
    ctx: Context,
    samples: list[StoredSample],
    annotations: bytes | None,
    fields: dict[str, str],
    links_base: str,
) -> CloneRequest:
    """The submission, checked: 6-20 samples, each annotated; the name, description and webhook."""
    if not MIN_SAMPLES <= len(samples) <= MAX_SAMPLES:
        message = f"must be {MIN_SAMPLES} to {MAX_SAMPLES} files; {len(samples)} given"
        raise ValidationFailed.field(SAMPLES, message)
    if annotations is None:
        raise ValidationFailed.field(ANNOTATIONS, "is required: a file of `file name|text` lines")
    said = _annotations(annotations)
    missing = [sample.file_name for sample in samples if sample.file_name not in said]
    if missing:
        message = f"has no line for {', '.join(missing)} (each sample needs `file name|text`)"
        raise ValidationFailed.field(ANNOTATIONS, message)
    name, description = fields.get("name") or None, fields.get("description") or None
    _check_name(name, description)
    webhook = check_target(
        fields.get("webhook") or None,
        fields.get("webhook_auth") or None,
        allow_private=ctx.settings.webhook_allow_private,
        url_field="webhook",
        token_field="webhook_auth",
        links_base=links_base,
    )
    pairs = [(sample, said[sample.file_name]) for sample in samples]
    return CloneRequest(name or "Matched voice", description, pairs, webhook)


def fingerprint(request: CloneRequest) -> str:
    """What makes two submissions the same request (for Idempotency-Key)."""
    webhook = request.webhook
    canonical = {
        "name": request.name,
        "description": request.description,
        "samples": [[s.file_name, s.sha256, text] for s, text in request.samples],
        "webhook": None if webhook is None else [webhook.url, webhook.token],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


async def submit_clone(
    ctx: Context,
    owner_id: str,
    task_id: str,
    request: CloneRequest,
    idempotency: IdempotencyKey | None,
) -> Task:
    params = {
        "profile_id": new_id("vp"),
        "name": request.name,
        "description": request.description,
        "samples": [
            {"key": s.key, "file_name": s.file_name, "text": text} for s, text in request.samples
        ],
    }
    task = new_task(task_id, owner_id, KIND, params, ctx.clock.now_ms(), request.webhook)
    return await submit(ctx, task, idempotency)


class VoiceClone:
    """The task kind: decode and match in the worker's thread, store the profile on completion."""

    name = KIND

    def __init__(self, matcher: VoiceMatcher) -> None:
        self._matcher = matcher

    def run(self, job: Job) -> MatchedVoice:
        samples = job.task.params["samples"]
        decoded = []
        for index, sample in enumerate(samples):
            if job.cancel.is_set():
                raise Stopped
            job.report("decoding", 0.5 * index / len(samples))
            decoded.append((self._decode(job, sample), sample["text"]))
        job.report("matching", 0.6)
        try:
            return self._matcher.match(decoded)
        except ValueError as exc:
            raise TaskFailed("CLONE_FAILED", f"The samples cannot be matched: {exc}.") from None

    @staticmethod
    def _decode(job: Job, sample: dict) -> bytes:
        with job.files.local_copy(sample["key"]) as path:
            data = path.read_bytes()
        try:
            return engine.decode_audio(data, STT_SAMPLE_RATE, MAX_SAMPLE_S).pcm
        except engine.InvalidAudio as exc:
            raise TaskFailed("INVALID_AUDIO", f"{sample['file_name']}: {exc.message}") from None

    async def complete(self, ctx: Context, task: Task, output: MatchedVoice) -> Completion:
        params, voice = task.params, output.voice
        profile_id = params["profile_id"]
        if await ctx.store.get_voice_profile(profile_id) is None:
            profile = VoiceProfile(
                profile_id, task.owner_id, params["name"], params["description"],
                output.languages, voice.engine, voice.name, voice.pitch, voice.pitch_range,
                voice.rate, ctx.clock.now_ms(),
            )  # fmt: skip
            await ctx.store.add_voice_profile(profile)
        return Completion({"profile_id": profile_id, "meta_data": output.measured})

    async def discard(self, ctx: Context, task: Task) -> None:
        for sample in task.params["samples"]:
            await ctx.files.delete(sample["key"])


async def accept_clone(
    ctx: Context,
    owner_id: str,
    task_id: str,
    samples: list[StoredSample],
    annotations: bytes | None,
    fields: dict[str, str],
    idempotency_key: str | None,
    links_base: str,
) -> Task:
    """Check and queue an uploaded clone form (its samples already stored under `task_id`).
    The samples are removed when the form is refused, and when an earlier submission with the
    same Idempotency-Key answers instead."""
    try:
        request = check_request(ctx, samples, annotations, fields, links_base)
        key = None
        if idempotency_key is not None:
            key = IdempotencyKey(idempotency_key, fingerprint(request))
        task = await submit_clone(ctx, owner_id, task_id, request, key)
    except BaseException:
        await _remove(ctx, samples)
        raise
    if task.task_id != task_id:
        await _remove(ctx, samples)
    return task


async def _remove(ctx: Context, samples: list[StoredSample]) -> None:
    for sample in samples:
        await ctx.files.delete(sample.key)
