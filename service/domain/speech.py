"""The two speech interfaces the domain owns, and the plain data they trade.

Text to speech turns text and a voice into 16-bit mono PCM with its viseme timeline; speech
to text turns 16 kHz 16-bit mono PCM into text with timed segments. Each has a built-in engine
that runs offline and an OpenAI-compatible backend (`service.generators`); `SpeechEngines` holds
a process's pair and picks which one speaks a given voice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

# What speech to text takes (the built-in model and whisper servers both want it).
STT_SAMPLE_RATE = 16_000
# Where a voice's speech is made: the built-in engine, or the configured backend.
BUILT_IN, BACKEND = "builtin", "backend"


class SpeechFailed(Exception):
    """An engine could not make or read speech; the message says why, in users' words."""


@dataclass(frozen=True)
class Voice:
    """How a profile speaks: an engine's voice name and its settings. `pitch` and `pitch_range`
    are 0-100 (50 is the voice's own); `rate` is words per minute."""

    engine: str  # BUILT_IN or BACKEND
    name: str  # the engine's voice ("en-us+f3"; a backend's "alloy")
    pitch: int = 50
    pitch_range: int = 50
    rate: int = 175


@dataclass(frozen=True)
class PremadeVoice:
    """A voice an engine offers as a premade profile."""

    id: str
    name: str
    description: str
    languages: tuple[str, ...]
    voice: Voice


@dataclass(frozen=True)
class MatchedVoice:
    """A voice matched to a speaker's samples (the clone task's outcome)."""

    voice: Voice
    languages: tuple[str, ...]
    measured: dict[str, float]  # what was measured of the samples (the task's meta_data)


@dataclass(frozen=True)
class Speech:
    """Synthesised speech: 16-bit little-endian mono PCM at `sample_rate`, and the visemes the
    mouth shows, [(start ms, viseme)] (see `service.domain.visemes`)."""

    pcm: bytes
    sample_rate: int
    visemes: list[tuple[int, str]] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


@dataclass(frozen=True)
class Segment:
    start_s: float
    end_s: float
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    segments: list[Segment]


class TextToSpeech(Protocol):
    def premade(self) -> tuple[PremadeVoice, ...]:
        """The voices this engine offers as premade profiles; the first is the default."""
        ...

    async def synthesize(self, text: str, voice: Voice) -> Speech:
        """Speech of `text` (one or more sentences); raises SpeechFailed."""
        ...


class SpeechToText(Protocol):
    async def transcribe(self, pcm: bytes) -> Transcript:
        """What is said in `pcm` (16-bit mono at STT_SAMPLE_RATE); raises SpeechFailed."""
        ...


@dataclass
class SpeechEngines:
    """A process's speech engines: the built-in text to speech (always there: cloned voices
    are matched onto its voices), the backend's when one is configured, and the speech to
    text in use (the backend's when configured, else the built-in one)."""

    built_in: TextToSpeech
    backend: TextToSpeech | None
    listener: SpeechToText

    def premade(self) -> tuple[PremadeVoice, ...]:
        """Every premade voice; the backend's come first, so its first is the default voice."""
        backend = self.backend.premade() if self.backend is not None else ()
        return backend + self.built_in.premade()

    def default(self) -> PremadeVoice:
        return self.premade()[0]

    async def synthesize(self, text: str, voice: Voice) -> Speech:
        if voice.engine == BACKEND and self.backend is not None:
            return await self.backend.synthesize(text, voice)
        if voice.engine == BACKEND:  # the backend has been unconfigured since
            voice = self.built_in.premade()[0].voice
        return await self.built_in.synthesize(text, voice)

    async def transcribe(self, pcm: bytes) -> Transcript:
        return await self.listener.transcribe(pcm)
