"""`LocalFileStore`: the domain's file store over a directory of the data dir. A blob is
written under a temporary name beside its place and renamed into place when complete, so a
reader never sees half a file."""

from __future__ import annotations

import asyncio
import glob
import os
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

_CHUNK = 1024 * 1024


class LocalWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._temp = _temporary(path)
        # Plain os.write on a raw descriptor: no buffering layer between the upload and disk.
        self._fd: int | None = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._size = 0

    async def write(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(chunk)

    async def commit(self) -> int:
        os.close(self._fd)
        self._fd = None
        os.replace(self._temp, self._path)
        return self._size

    async def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._temp.unlink(missing_ok=True)


class LocalFileStore:
    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if not key or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"invalid file key {key!r}")
        return self._root.joinpath(*parts)

    def writer(self, key: str) -> LocalWriter:
        return LocalWriter(self._path(key))

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(_write_file, self._path(key), data)

    async def size(self, key: str) -> int | None:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return None

    async def read(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        with self._path(key).open("rb") as file:
            file.seek(start)
            while start < end:
                chunk = await asyncio.to_thread(file.read, min(_CHUNK, end - start))
                if not chunk:
                    return
                start += len(chunk)
                yield chunk

    async def delete(self, key: str | None) -> None:
        if key is None:
            return
        path = self._path(key)
        path.unlink(missing_ok=True)
        # Partial writes of the blob go with it: those of a writer that died before it could
        # remove its own (the video engine writes beside its target the same way).
        for partial in path.parent.glob(_temporary_pattern(path)):
            partial.unlink(missing_ok=True)
        if path.parent != self._root / key.split("/")[0]:
            # A per-task folder (results/<task>/...) goes with its last file.
            with suppress(OSError):
                path.parent.rmdir()

    @contextmanager
    def local_copy(self, key: str) -> Iterator[Path]:
        path = self._path(key)
        if not path.is_file():
            raise FileNotFoundError(f"no file {key!r}")
        yield path

    @contextmanager
    def local_target(self, key: str) -> Iterator[Path]:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield path
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    def direct_link(self, key: str, expires_ms: int, now_ms: int) -> None:
        return None  # the data dir is served only through the service's signed links

    def free_bytes(self) -> int:
        """What an unprivileged process may still write on the directory's file system."""
        self._root.mkdir(parents=True, exist_ok=True)
        return shutil.disk_usage(self._root).free

    async def stale(self, prefix: str, older_than_ms: int) -> list[str]:
        folder = self._path(prefix.rstrip("/"))
        if not folder.is_dir():
            return []
        cutoff = older_than_ms / 1000
        found = []
        for entry in os.scandir(folder):
            if entry.is_file() and entry.stat().st_mtime < cutoff:
                found.append(f"{prefix.rstrip('/')}/{entry.name}")
        return found


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")


def _temporary_pattern(path: Path) -> str:
    """A glob matching every `_temporary` name of `path`."""
    return f".{glob.escape(path.name)}.*.part"


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    temporary.write_bytes(data)
    os.replace(temporary, path)
