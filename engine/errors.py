"""The engine's error hierarchy: every failure the engine reports is an EngineError."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error raised by the engine."""


class TargetNotLarger(EngineError):
    """The fitted output would not be larger than the source."""


class InvalidVideo(EngineError):
    """A video breaks an input limit of the upscale task.

    `limit` names the limit (e.g. ``"frame_rate"``), `actual` is what the file has and
    `allowed` what the limit permits; `message` is a sentence naming all three.
    """

    def __init__(self, limit: str, actual: object, allowed: object, message: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.actual = actual
        self.allowed = allowed
        self.message = message


class Canceled(EngineError):
    """The caller's cancel event was set; the work stopped and left no output."""


class InvalidAudio(EngineError):
    """Audio that cannot be used: `reason` is a stable identifier (``"undecodable"``,
    ``"no_audio"``, ``"empty"``, ``"duration"``) and `message` a sentence saying what is wrong."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
