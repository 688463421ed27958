"""Serving a blob of the file store over HTTP: the whole file (200), or one byte range (206,
`Content-Range`, also a suffix range `bytes=-N`), 416 for a range outside the file, and HEAD
without reading it (the front door marks HEAD requests). A `Range` this does not serve (several
ranges, another unit) is ignored, as HTTP allows, and the whole file is sent."""

from __future__ import annotations

import re

from litestar.types import Receive, Scope, Send

from service.domain.errors import RangeNotSatisfiable
from service.domain.files import FileStore

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """[start, end) of a single-range `Range` header, None to send the whole file; raises
    RangeNotSatisfiable for a range that starts past the end (or an empty suffix)."""
    match = _RANGE.fullmatch(header.strip()) if header else None
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":  # the last N bytes
        length = int(last)
        if length == 0:
            raise RangeNotSatisfiable("An empty suffix range selects nothing.", size)
        return max(0, size - length), size
    start = int(first)
    if last != "" and int(last) < start:  # not a valid range: ignored
        return None
    end = size if last == "" else min(size, int(last) + 1)
    if start >= size or end <= start:
        raise RangeNotSatisfiable(f"The range starts past the end of a {size}-byte file.", size)
    return start, end


class BlobResponse:
    """An ASGI response streaming `key` from `files` (a `size`-byte blob)."""

    def __init__(
        self,
        files: FileStore,
        key: str,
        size: int,
        media_type: str,
        range_header: str | None,
        headers: dict[str, str],
    ) -> None:
        self._files, self._key = files, key
        span = byte_range(range_header, size)
        self._start, self._end = span or (0, size)
        self._status = 200 if span is None else 206
        self._headers = [
            (b"content-type", media_type.encode()),
            (b"content-length", str(self._end - self._start).encode()),
            (b"accept-ranges", b"bytes"),
            *((name.lower().encode(), value.encode("latin-1")) for name, value in headers.items()),
        ]
        if span is not None:
            self._headers.append(
                (b"content-range", f"bytes {self._start}-{self._end - 1}/{size}".encode())
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self._status, "headers": self._headers}
        )
        if not scope.get("head"):
            async for chunk in self._files.read(self._key, self._start, self._end):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def signed_file(
    files: FileStore, key: str, size: int, media_type: str, name: str, range_header: str | None
) -> BlobResponse:
    """A file a signed link names (results, speech): shown inline as `name`, and kept only by
    the client's own cache (the link is a capability)."""
    headers = {"Content-Disposition": f'inline; filename="{name}"', "Cache-Control": "private"}
    return BlobResponse(files, key, size, media_type, range_header, headers)
