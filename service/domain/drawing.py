"""The images backend interface the domain owns, and the plain data it trades (image generation,
SPEC 14). The one implementation is an OpenAI-compatible backend
(`service.generators.openai_images`): no model that draws from a prompt runs on this machine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ImageFailed(Exception):
    """The backend could not draw the picture; the message says why, in users' words."""


@dataclass(frozen=True)
class Reference:
    png: bytes  # re-encoded by the service
    label: str | None


class ImageBackend(Protocol):
    """Draws a picture (`service.generators.openai_images`)."""

    async def draw(
        self, prompt: str, size: str, seed: int | None, references: list[Reference]
    ) -> bytes:
        """The picture's encoded bytes as the backend gave them; raises ImageFailed."""
        ...
