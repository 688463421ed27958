"""Text to speech and speech to text: /v1/speech/tts and /v1/speech/stt (SPEC 14), and the
signed links of kept speech files."""

from __future__ import annotations

from litestar import Controller, Request, Router
from litestar.types import ASGIApp

from service.api.blobs import signed_file
from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of, public_base
from service.api.openapi import error_responses, file_download, get, post
from service.api.params import Expires, RangeHeader, Signature
from service.domain import speaking
from service.schemas.speech import (
    STTCreate,
    STTEnvelope,
    STTOutput,
    TTSCreate,
    TTSEnvelope,
    TTSOutput,
)

# Base64 media inside JSON (SPEC 14): 20 MB of audio is about 27 MB of base64.
MAX_SPEECH_BODY = 32 * 1024 * 1024


class SpeechController(Controller):
    path = "/speech"
    tags = ("speech",)

    @post(
        "/tts",
        operation_class=json_body(TTSCreate),
        status_code=200,
        responses=error_responses(502),
    )
    async def text_to_speech(self, request: Request) -> TTSEnvelope:
        ctx, body = ctx_of(request), await read_json(request, TTSCreate)
        spoken = await speaking.text_to_speech(ctx, owner_of(request), body.request())
        return TTSEnvelope(TTSOutput.of(spoken, public_base(request)))

    @post(
        "/stt",
        operation_class=json_body(STTCreate),
        status_code=200,
        responses=error_responses(502),
    )
    async def speech_to_text(self, request: Request) -> STTEnvelope:
        ctx, body = ctx_of(request), await read_json(request, STTCreate)
        heard = await speaking.speech_to_text(ctx, owner_of(request), body.decoded())
        return STTEnvelope(STTOutput.of(heard))


def speech_router() -> Router:
    return Router(
        path="/", route_handlers=[SpeechController], request_max_body_size=MAX_SPEECH_BODY
    )


@get(
    speaking.SPEECH_PATH.replace("{speech_id}", "{speech_id:str}"),
    tags=["public"],
    summary="Speech kept for a file_url answer (signed link, no key)",
    operation_class=file_download("audio/wav"),
    responses=error_responses(403, 410, 416),
)
async def speech_file(
    request: Request,
    speech_id: str,
    expires: Expires = None,
    signature: Signature = None,
    byte_range: RangeHeader = None,
) -> ASGIApp:
    ctx = ctx_of(request)
    key, size = await speaking.speech_file(ctx, speech_id, expires, signature)
    return signed_file(ctx.files, key, size, "audio/wav", f"{speech_id}.wav", byte_range)
