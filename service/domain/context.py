"""What domain functions are built from: settings, a store, a file store, a clock, the signing
key, the responders of conversations, the speech engines, the face finder and the images
backend."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field

from service.clock import Clock
from service.domain.drawing import ImageBackend
from service.domain.faces import FaceFinder
from service.domain.files import FileStore
from service.domain.speech import SpeechEngines
from service.domain.store import Store
from service.responders import Responders
from service.settings import Settings


@dataclass
class Context:
    settings: Settings
    store: Store
    files: FileStore
    clock: Clock
    # Signs file links and derives each owner's webhook secret (see service.runtime).
    signing_key: bytes
    # Where the replies of live conversations come from (their HTTP clients are shared).
    responders: Responders
    # Text to speech and speech to text (see service.domain.speech).
    speech: SpeechEngines
    # Finds the faces of avatar images (see service.domain.faces).
    faces: FaceFinder
    # The images backend (None: AVATAR_IMAGE_BASE_URL is unset; image generation answers 503).
    images: ImageBackend | None = None
    # Work that outlives a request (session preparation, last-used stamps): kept here so it
    # is not garbage-collected mid-flight and can be finished on shutdown.
    background: set[asyncio.Task] = field(default_factory=set)

    def spawn(self, coro: Coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    async def drain(self, timeout: float = 10.0) -> None:
        """Let background work finish (used on shutdown)."""
        if self.background:
            await asyncio.wait(set(self.background), timeout=timeout)
