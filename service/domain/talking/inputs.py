"""A generated-video submission, checked and queued: the face (`image`, or a stored avatar's by
`avatar_id`) and the sound (`audio`, or `text` spoken by `voice_profile_id` now, its viseme
timeline kept to drive the mouth), each against SPEC 14's limits. The inputs are stored under
the task's id (flat beside other uploads, so the sweeper removes abandoned ones) and removed
when the task ends."""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass

import msgspec

import engine
from service.domain import voices
from service.domain.agents import check_avatar_ref
from service.domain.avatars import avatar_face, owned_avatar
from service.domain.context import Context
from service.domain.errors import InvalidAudio, PayloadTooLarge, ValidationFailed
from service.domain.faces import FaceLandmarks
from service.domain.files import UPLOADS, avatar_key
from service.domain.ids import new_id
from service.domain.images import MEDIA_FORMATS, decode_image, encode_png
from service.domain.models import IdempotencyKey, Task, WebhookTarget
from service.domain.speaking import synthesize
from service.domain.tasks import new_task, submit
from service.domain.webhooks import check_target

MAX_AUDIO_BYTES = 20 * 1000 * 1000
MAX_AUDIO_S = 600.0
MAX_TEXT = 10_000
MAX_PROMPT = 512
# Speech is decoded at this rate for the analysis and the video's AAC track.
AUDIO_RATE = 24_000
_AUDIO_ALLOWED = (
    "Send a recording in a common format (WAV, MP3, Ogg, WebM, M4A, FLAC) of at most "
    f"{MAX_AUDIO_S:g} s."
)


def input_key(task_id: str, part: str) -> str:
    """Where a task's input `part` (image, audio, visemes) waits for its run."""
    return f"{UPLOADS}{task_id}.{part}"


@dataclass(frozen=True)
class VideoRequest:
    """A submission as the client sent it (media decoded from base64, not yet checked)."""

    kind: str
    image: bytes | None
    avatar_id: str | None
    audio: bytes | None
    text: str | None
    voice_profile_id: str | None
    webhook_url: str | None
    webhook_token: str | None
    positive_prompt: str = ""
    negative_prompt: str = ""


@dataclass(frozen=True)
class _Inputs:
    png: bytes
    face: FaceLandmarks | None  # None: the run finds it
    audio: bytes
    visemes: list[tuple[int, str]] | None  # the TTS timeline, when the sound is ours
    webhook: WebhookTarget | None


def _one_of(first: str, first_given: bool, second: str, second_given: bool) -> None:
    if first_given == second_given:
        message = f"give either `{first}` or `{second}`" + (", not both" if first_given else "")
        raise ValidationFailed.field(first, message)


def _reencoded(data: bytes):
    """A portrait upload (PNG, JPEG or WebP: SPEC 14's media formats) re-encoded as PNG."""
    return encode_png(decode_image(data, formats=MEDIA_FORMATS))


async def _face_image(ctx: Context, owner_id: str, request: VideoRequest):
    """(the portrait as a PNG the service made, its face when known now). An upload is decoded
    and re-encoded, its face found by the run; a stored avatar comes with the face kept for it
    (one without a face is refused now)."""
    if request.avatar_id is None:
        return (await asyncio.to_thread(_reencoded, request.image or b"")).png, None
    await check_avatar_ref(ctx, owner_id, request.avatar_id)  # 422 as for agents and sessions
    avatar = await owned_avatar(ctx, owner_id, request.avatar_id)
    face = await avatar_face(ctx, avatar)
    if face is None:
        message = "names an avatar without a face (none was found in its image)"
        raise ValidationFailed.field("avatar_id", message)
    size = await ctx.files.size(avatar_key(request.avatar_id)) or 0
    chunks = ctx.files.read(avatar_key(request.avatar_id), 0, size)
    return b"".join([chunk async for chunk in chunks]), face


async def _sound(ctx: Context, owner_id: str, request: VideoRequest):
    """(audio file bytes, TTS viseme timeline or None): an upload decoded once here so a bad
    one is refused now, or the text spoken with the profile's voice."""
    if request.audio is not None:
        if len(request.audio) > MAX_AUDIO_BYTES:
            raise PayloadTooLarge(
                f"The audio is {len(request.audio):,} bytes; at most {MAX_AUDIO_BYTES:,} allowed."
            )
        try:
            await asyncio.to_thread(engine.decode_audio, request.audio, AUDIO_RATE, MAX_AUDIO_S)
        except engine.InvalidAudio as exc:
            raise InvalidAudio(f"audio: {exc.message} {_AUDIO_ALLOWED}") from None
        return request.audio, None
    if request.voice_profile_id is None:
        raise ValidationFailed.field("voice_profile_id", "is required with `text`")
    text = request.text or ""
    if not text.strip() or len(text) > MAX_TEXT:
        raise ValidationFailed.field("text", f"must be 1 to {MAX_TEXT:,} characters")
    profile = await voices.usable_profile(ctx, owner_id, request.voice_profile_id,
                                          "voice_profile_id")  # fmt: skip
    speech = await synthesize(ctx, text, profile.voice, 0.1)
    if speech.duration_s > MAX_AUDIO_S:
        message = f"is {speech.duration_s:.0f} s when spoken; at most {MAX_AUDIO_S:g} s allowed"
        raise ValidationFailed.field("text", message)
    return engine.wav_bytes(speech.pcm, speech.sample_rate), list(speech.visemes)


async def check_request(
    ctx: Context, owner_id: str, request: VideoRequest, links_base: str
) -> _Inputs:
    _one_of("image", request.image is not None, "avatar_id", request.avatar_id is not None)
    _one_of("audio", request.audio is not None, "text", request.text is not None)
    for name in ("positive_prompt", "negative_prompt"):
        if len(getattr(request, name)) > MAX_PROMPT:
            raise ValidationFailed.field(name, f"must be at most {MAX_PROMPT} characters")
    webhook = check_target(
        request.webhook_url,
        request.webhook_token,
        allow_private=ctx.settings.webhook_allow_private,
        url_field="webhook.url",
        token_field="webhook.auth_token",
        links_base=links_base,
    )
    png, face = await _face_image(ctx, owner_id, request)
    audio, visemes = await _sound(ctx, owner_id, request)
    return _Inputs(png, face, audio, visemes, webhook)


def _fingerprint(request: VideoRequest, inputs: _Inputs) -> str:
    """What makes two submissions the same request (for Idempotency-Key)."""
    webhook = inputs.webhook
    canonical = {
        "kind": request.kind,
        "image": hashlib.sha256(request.image or b"").hexdigest(),
        "avatar_id": request.avatar_id,
        "audio": hashlib.sha256(request.audio or b"").hexdigest(),
        "text": request.text,
        "voice_profile_id": request.voice_profile_id,
        "prompts": [request.positive_prompt, request.negative_prompt],
        "webhook": None if webhook is None else [webhook.url, webhook.token],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


async def _store(ctx: Context, task_id: str, inputs: _Inputs) -> dict[str, str]:
    keys = {"image_key": input_key(task_id, "image"), "audio_key": input_key(task_id, "audio")}
    await ctx.files.put(keys["image_key"], inputs.png)
    await ctx.files.put(keys["audio_key"], inputs.audio)
    if inputs.visemes is not None:
        keys["visemes_key"] = input_key(task_id, "visemes")
        await ctx.files.put(keys["visemes_key"], json.dumps(inputs.visemes).encode())
    return keys


async def remove_inputs(ctx: Context, task: Task) -> None:
    for name in ("image_key", "audio_key", "visemes_key"):
        await ctx.files.delete(task.params.get(name))


async def submit_video(
    ctx: Context,
    owner_id: str,
    request: VideoRequest,
    idempotency_key: str | None,
    links_base: str,
) -> Task:
    """Check the request, store its inputs and queue its task (or answer the task an earlier
    submission with the same Idempotency-Key made; the new inputs are then removed)."""
    inputs = await check_request(ctx, owner_id, request, links_base)
    task_id = new_id("tsk")
    params = {
        **await _store(ctx, task_id, inputs),
        "avatar_id": request.avatar_id,
        "face": None if inputs.face is None else msgspec.to_builtins(inputs.face),
        "positive_prompt": request.positive_prompt,
        "negative_prompt": request.negative_prompt,
    }
    task = new_task(task_id, owner_id, request.kind, params, ctx.clock.now_ms(), inputs.webhook)
    key = None
    if idempotency_key is not None:
        key = IdempotencyKey(idempotency_key, _fingerprint(request, inputs))
    try:
        stored = await submit(ctx, task, key)
    except BaseException:
        await remove_inputs(ctx, task)
        raise
    if stored.task_id != task_id:
        await remove_inputs(ctx, task)
    return stored
