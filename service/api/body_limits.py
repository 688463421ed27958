"""What reading a request body may hold (docs/api.md, "Limits that protect the service").

- Any body: a pause longer than AVATAR_UPLOAD_IDLE_S between two chunks ends the request with
  408 (a client that stalls mid-body holds nothing for long).
- Uploads: room on the file store's disk, AVATAR_MIN_FREE_BYTES free beyond what the upload
  declares (else 507), looked at when the body starts and again as it streams in; and a slot
  among the AVATAR_MAX_UPLOADS_PER_KEY of the caller's API key (else 429).

The slots are shared by every HTTP worker of one `serve`: slot i of a key is an flock on the
file `upload-slots/{key_id}.{i}` of the data dir. The kernel drops a lock when its holder
closes the file or dies, so a crashed worker leaves no slot taken, and with N workers a key
still has its cap, not N times it (a per-worker count would also refuse a key whose uploads
happen to land on one worker while the others are idle)."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, contextmanager
from pathlib import Path

from litestar import Request
from litestar.exceptions import InternalServerException

from service.domain.context import Context
from service.domain.errors import BadRequest, InsufficientStorage, RateLimited, RequestTimeout
from service.domain.files import FileStore

SLOTS_DIR = "upload-slots"
# Set in a request's scope when its answer comes before the end of its body: the answer then
# closes the connection (`service.api.errors`) instead of leaving the server to wait for the
# rest, which a stalled or oversized client may never send.
BODY_UNREAD = "avatar.body_unread"
# When a key's slots are all taken: uploads take seconds to minutes; a client polling faster
# would only add load.
RETRY_AFTER_S = 5
# A streaming upload looks at the free space again after each this many bytes.
RECHECK_BYTES = 16 * 1024 * 1024


class BodyLimits:
    def __init__(self, ctx: Context) -> None:
        settings = ctx.settings
        self.idle_s = settings.upload_idle_s
        self._per_key = settings.max_uploads_per_key
        self._min_free = settings.min_free_bytes
        self._slots = settings.data_dir / SLOTS_DIR
        self._slots.mkdir(parents=True, exist_ok=True)

    async def chunks(self, request: Request) -> AsyncIterator[bytes]:
        """The request's body as it arrives; RequestTimeout after a pause of `idle_s`,
        BadRequest when the client goes away mid-body."""
        stream = request.stream()
        try:
            while True:
                try:
                    async with asyncio.timeout(self.idle_s):
                        chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise RequestTimeout(
                        f"The body stopped arriving for {self.idle_s:g} s; the request is "
                        "abandoned (send it again)."
                    ) from None
                except InternalServerException:  # Litestar's word for a client gone mid-body
                    raise BadRequest("The body ended before it was complete.") from None
                yield chunk
        except BaseException:  # a limit, or the consumer gave up (413 included)
            leave_unread(request)
            raise
        finally:
            await stream.aclose()

    async def upload_chunks(
        self, request: Request, files: FileStore, key_id: str, declared: int
    ) -> AsyncIterator[bytes]:
        """`chunks` of an upload declaring `declared` bytes (0: unknown). Once the first chunk
        is in (so a body over the route's limit is refused first, with 413), the room for
        `declared` is checked and one of the key's slots taken and held to the end; the free
        space is looked at again every RECHECK_BYTES. Close it (`aclosing`) to let go early."""
        chunks = self.chunks(request)
        async with aclosing(chunks):
            chunk = await anext(chunks, None)
            self.check_room(files, declared)
            with self.slot(key_id):
                received = checked = 0
                while chunk is not None:
                    received += len(chunk)
                    if received - checked >= RECHECK_BYTES:
                        self.check_room(files, max(declared - received, 0))
                        checked = received
                    yield chunk
                    chunk = await anext(chunks, None)

    def check_room(self, files: FileStore, needed: int) -> None:
        """InsufficientStorage unless `needed` more bytes leave AVATAR_MIN_FREE_BYTES free."""
        free = files.free_bytes()
        if free is not None and free < self._min_free + needed:
            raise InsufficientStorage(
                "The server has too little free disk space to take this upload now; "
                "try again later."
            )

    @contextmanager
    def slot(self, key_id: str) -> Iterator[None]:
        """Hold one of the key's upload slots for the block; RateLimited when none is free."""
        for index in range(self._per_key):
            fd = os.open(self._slot_path(key_id, index), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield
            finally:
                os.close(fd)  # releases the lock
            return
        raise RateLimited(
            f"This API key has {self._per_key} uploads in progress, as many as it may; send "
            "this one when one of them has finished.",
            RETRY_AFTER_S,
        )

    def _slot_path(self, key_id: str, index: int) -> Path:
        return self._slots / f"{key_id}.{index}"  # key ids are URL-safe base64 after key_


def leave_unread(request: Request) -> None:
    """Mark the request as answered before the end of its body."""
    request.scope[BODY_UNREAD] = True  # type: ignore[literal-required]


def install(state, ctx: Context) -> None:
    state["body_limits"] = BodyLimits(ctx)


def body_limits(request: Request) -> BodyLimits:
    return request.app.state["body_limits"]
