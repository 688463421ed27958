"""Speech endpoint bodies (SPEC 14), in the hosted API's shapes: TTSApiRequestBody and
TTSOutput, STTApiRequestBody and STTOutput."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

import msgspec

from service.domain import speaking
from service.domain.errors import ValidationFailed
from service.schemas.common import Identifier, StrictBody

Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]


class TTSOptions(StrictBody):
    """`fragment_interval`: seconds of silence between sentences (default 0.1). `temperature`
    is accepted as the hosted API defines it; the built-in voice has no randomness to tune."""

    fragment_interval: Fraction | None = None
    temperature: Fraction | None = None


class TTSCreate(StrictBody):
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=speaking.MAX_TEXT)]
    voice_profile_id: Identifier
    return_type: Literal["b64_audio_str", "file_url"]
    opts: TTSOptions | None = None
    chinese_language: Literal["mandarin", "yue"] = "yue"

    def request(self) -> speaking.SpeechRequest:
        opts = self.opts or TTSOptions()
        interval = opts.fragment_interval
        return speaking.SpeechRequest(
            self.text,
            self.voice_profile_id,
            self.return_type,
            speaking.DEFAULT_FRAGMENT_INTERVAL_S if interval is None else interval,
            self.chinese_language,
        )


class TTSOutput(msgspec.Struct, kw_only=True):
    id: str
    voice_profile_id: str
    output_duration: float
    b64_audio_str: str | msgspec.UnsetType = msgspec.UNSET  # a base64 WAV
    file_url: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, spoken: speaking.Spoken, base_url: str) -> TTSOutput:
        unset = msgspec.UNSET
        inline = spoken.file_path is None
        return cls(
            id=spoken.speech_id,
            voice_profile_id=spoken.voice_profile_id,
            output_duration=spoken.duration_s,
            b64_audio_str=base64.b64encode(spoken.wav).decode("ascii") if inline else unset,
            file_url=unset if inline else base_url + spoken.file_path,
        )


class TTSEnvelope(msgspec.Struct):
    data: TTSOutput


class STTCreate(StrictBody):
    audio: Annotated[str, msgspec.Meta(min_length=1)]  # base64 of the recording

    def decoded(self) -> bytes:
        try:
            return base64.b64decode(self.audio, validate=True)
        except (binascii.Error, ValueError):
            raise ValidationFailed.field(
                "audio", "must be base64 (the recording's bytes)"
            ) from None


class TimedText(msgspec.Struct):
    start: float
    end: float
    text: str


class STTOutput(msgspec.Struct, kw_only=True):
    id: str
    text: str
    input_duration: float
    transcription: list[TimedText]

    @classmethod
    def of(cls, heard: speaking.Heard) -> STTOutput:
        segments = heard.transcript.segments
        return cls(
            id=heard.request_id,
            text=heard.transcript.text,
            input_duration=heard.duration_s,
            transcription=[TimedText(s.start_s, s.end_s, s.text) for s in segments],
        )


class STTEnvelope(msgspec.Struct):
    data: STTOutput
