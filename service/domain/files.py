"""The file store interface: named blobs the service keeps (uploaded inputs, results, avatar
images). A local directory (`service.store.files`) or an S3-compatible bucket
(`service.store.s3`) implements it. Keys are built here, so no caller knows where a blob
lives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol


def upload_key(task_id: str) -> str:
    return f"uploads/{task_id}.mp4"


def image_upload_key(avatar_id: str) -> str:
    """Where an avatar's uploaded image waits while it is checked and re-encoded."""
    return f"uploads/{avatar_id}.image"


def result_key(task_id: str) -> str:
    return f"results/{task_id}/output.mp4"


def avatar_key(avatar_id: str) -> str:
    return f"avatars/{avatar_id}.png"


def segment_prefix(task_id: str) -> str:
    """What a segmented upscale of the task keeps while it runs (see domain.upscale.segments)."""
    return f"{SEGMENTS}{task_id}/"


def segment_key(task_id: str, fingerprint: str, index: int) -> str:
    return f"{segment_prefix(task_id)}{fingerprint}-{index:05d}.mp4"


def segment_cancel_key(task_id: str, run: str) -> str:
    """The cancel mark of one run of the task (a run that lost its lease and stops late must
    not stop the run that took its place)."""
    return f"{segment_prefix(task_id)}cancel-{run}"


UPLOADS = "uploads/"
SEGMENTS = "segments/"


BUILD_PHOTOS = "builds/"


def build_photo_key(avatar_id: str) -> str:
    """Where an avatar build's photo waits (apart from uploads/: the sweeper's one-hour rule
    for abandoned uploads must not take a photo whose build is still queued)."""
    return f"{BUILD_PHOTOS}{avatar_id}.image"


# Images drawn by the image backend, kept for their task's status until AVATAR_RESULT_TTL_S.
DRAWN_IMAGES = "images/"


def drawn_image_key(task_id: str) -> str:
    return f"{DRAWN_IMAGES}{task_id}.jpg"


def reference_image_key(task_id: str, index: int) -> str:
    # Flat beside other uploads, named by the task: the sweeper removes abandoned ones.
    return f"{UPLOADS}{task_id}.reference-{index}.png"


class BlobWriter(Protocol):
    """A blob being written; it exists under its key only after `commit`."""

    async def write(self, chunk: bytes) -> None: ...
    async def commit(self) -> int:
        """Publish the blob; returns its size."""
        ...

    async def abort(self) -> None:
        """Forget what was written (safe to call after commit or twice)."""
        ...


class FileStore(Protocol):
    def writer(self, key: str) -> BlobWriter: ...
    async def put(self, key: str, data: bytes) -> None: ...
    async def size(self, key: str) -> int | None:
        """The blob's size, or None when there is none."""
        ...

    def read(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        """Bytes [start, end) of the blob, in chunks."""
        ...

    async def delete(self, key: str | None) -> None:
        """Remove the blob (and nothing happens when there is none, or `key` is None)."""
        ...

    def local_copy(self, key: str) -> AbstractContextManager[Path]:
        """A file on this machine holding the blob, for code that needs a path (the video
        engine); for a local store, the blob itself."""
        ...

    def local_target(self, key: str) -> AbstractContextManager[Path]:
        """A path on this machine to write the blob to; it is published under `key` when the
        block exits without an error, and nothing is left behind when it raises."""
        ...

    def free_bytes(self) -> int | None:
        """Room left for new blobs on the disk they are written to, or None when the store
        has no such bound (uploads are refused when it runs low)."""
        ...

    async def stale(self, prefix: str, older_than_ms: int) -> list[str]:
        """Keys under `prefix` last written before `older_than_ms` (for the janitor)."""
        ...

    def direct_link(self, key: str, expires_ms: int, now_ms: int) -> str | None:
        """An absolute URL the store itself serves the blob at until `expires_ms` (at the
        latest), when it is set up to give one; else None (links go through the service)."""
        ...
