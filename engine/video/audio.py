"""Audio in and out for the speech features: any format FFmpeg decodes, read into 16-bit mono
PCM at the rate an engine wants; and PCM written as a WAV file.

Decoding goes through PyAV (this package is the product's only PyAV user). Input is bounded
twice: by the caller's byte limit before it gets here, and by `max_seconds` while decoding, so
a small file that claims or holds hours of sound is refused before it fills memory."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import av

from engine.errors import InvalidAudio


@dataclass(frozen=True)
class DecodedAudio:
    pcm: bytes  # 16-bit little-endian mono
    sample_rate: int

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


def decode_audio(data: bytes, sample_rate: int | None, max_seconds: float) -> DecodedAudio:
    """The first audio stream of `data` as mono 16-bit PCM at `sample_rate` (None: the
    stream's own rate). Raises InvalidAudio when it holds no decodable audio, or more than
    `max_seconds` of it."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise InvalidAudio("no_audio", "The file holds no audio stream.")
            stream = container.streams.audio[0]
            sample_rate = sample_rate or stream.rate
            if not sample_rate:
                raise InvalidAudio("undecodable", "The audio stream has no sample rate.")
            limit = int(max_seconds * sample_rate) * 2
            resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)
            out = bytearray()
            for frame in container.decode(stream):
                for converted in resampler.resample(frame):
                    out += bytes(converted.planes[0])[: converted.samples * 2]
                if len(out) > limit:
                    raise InvalidAudio(
                        "duration", f"The audio lasts longer than {max_seconds:g} seconds."
                    )
            for converted in resampler.resample(None):
                out += bytes(converted.planes[0])[: converted.samples * 2]
    except (av.FFmpegError, ValueError, IndexError) as exc:
        raise InvalidAudio("undecodable", "The audio could not be decoded.") from exc
    if not out:
        raise InvalidAudio("empty", "The file holds no sound.")
    return DecodedAudio(bytes(out[:limit]), sample_rate)


def wav_bytes(pcm: bytes, sample_rate: int) -> bytes:
    """A RIFF WAV file of 16-bit mono PCM."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(sample_rate)
        file.writeframes(pcm)
    return buffer.getvalue()
