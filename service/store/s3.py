"""`S3FileStore`: the domain's file store over an S3-compatible bucket (AWS S3, MinIO, Ceph,
...), so every node reads and writes the same blobs. Credentials come from boto3's usual chain
(the AWS_* variables, a profile, an instance role).

An upload streams into a multipart upload: at most two parts are held in memory (one filling,
one on its way), and a failed or refused upload is aborted, leaving nothing. Code that needs a
path (the video engine) gets a temporary copy in the spool directory, and what it writes there
is uploaded when it is done."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from service.store.errors import FileStoreUnavailable

# S3's smallest part is 5 MiB (all but the last); 8 MiB keeps a 1 GiB upload to 128 parts.
PART_BYTES = 8 * 1024 * 1024
_READ_CHUNK = 1024 * 1024
_PRESIGN_MAX_S = 7 * 86400  # the longest a SigV4 presigned link may live


def _boto3() -> Any:
    try:
        import boto3
        import botocore.config
    except ImportError:
        raise FileStoreUnavailable(
            "AVATAR_S3_BUCKET needs boto3: pip install 'avatar-service[cluster]'"
        ) from None
    return boto3, botocore.config


@functools.cache
def _client(endpoint_url: str | None, region: str | None) -> Any:
    """One client per endpoint in a process: making one loads botocore's service models
    (~0.4 s), and a client is safe to share between threads."""
    boto3, config = _boto3()
    style = "path" if endpoint_url else "auto"  # S3-compatible servers rarely route by host
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=region,
        config=config.Config(
            # SigV4: presigned links carry X-Amz-Expires (at most 7 days).
            signature_version="s3v4",
            s3={"addressing_style": style},
            retries={"mode": "standard"},
        ),
    )


def _missing(exc: Exception) -> bool:
    """Whether a botocore ClientError says the object (or upload) is not there."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("404", "NoSuchKey", "NotFound", "NoSuchUpload")


class S3Writer:
    """A blob being written as a multipart upload (a single PUT when it fits in one part)."""

    def __init__(self, store: S3FileStore, key: str) -> None:
        self._store, self._key = store, store.object_key(key)
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict] = []
        self._sending: asyncio.Future | None = None
        self._size = 0
        self._done = False

    async def write(self, chunk: bytes) -> None:
        self._buffer += chunk
        self._size += len(chunk)
        if len(self._buffer) >= PART_BYTES:
            await self._send_part()

    async def _send_part(self) -> None:
        """Hand the buffer to a thread as the next part, once the previous part is sent."""
        if self._upload_id is None:
            made = await asyncio.to_thread(
                self._store.client.create_multipart_upload, Bucket=self._store.bucket, Key=self._key
            )
            self._upload_id = made["UploadId"]
        if self._sending is not None:
            await self._sending
        body, self._buffer = bytes(self._buffer), bytearray()
        number = len(self._parts) + 1
        self._parts.append({"PartNumber": number})
        self._sending = asyncio.ensure_future(asyncio.to_thread(self._upload, number, body))

    def _upload(self, number: int, body: bytes) -> None:
        answer = self._store.client.upload_part(
            Bucket=self._store.bucket, Key=self._key, UploadId=self._upload_id,
            PartNumber=number, Body=body,
        )  # fmt: skip
        self._parts[number - 1]["ETag"] = answer["ETag"]

    async def commit(self) -> int:
        client, bucket = self._store.client, self._store.bucket
        try:
            if self._upload_id is None:
                body = bytes(self._buffer)
                await asyncio.to_thread(client.put_object, Bucket=bucket, Key=self._key, Body=body)
            else:
                if self._buffer:
                    await self._send_part()
                await self._sending
                await asyncio.to_thread(
                    client.complete_multipart_upload, Bucket=bucket, Key=self._key,
                    UploadId=self._upload_id, MultipartUpload={"Parts": self._parts},
                )  # fmt: skip
        except BaseException:
            await self.abort()
            raise
        self._done = True
        return self._size

    async def abort(self) -> None:
        if self._done:
            return
        self._done, self._buffer = True, bytearray()
        if self._sending is not None:
            with contextlib.suppress(Exception):
                await self._sending
        if self._upload_id is not None:
            await asyncio.to_thread(self._store.abort_upload, self._key, self._upload_id)


class S3FileStore:
    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        spool: Path,
        presigned: bool = False,
    ) -> None:
        self.bucket = bucket
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._endpoint_url, self._region = endpoint_url, region
        self._spool = spool
        self.presigned = presigned

    @property
    def client(self) -> Any:
        return _client(self._endpoint_url, self._region)

    def check(self) -> None:
        """Raise FileStoreUnavailable unless the bucket answers (called at start)."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except FileStoreUnavailable:
            raise
        except Exception as exc:
            at = f" at {self._endpoint_url}" if self._endpoint_url else ""
            raise FileStoreUnavailable(
                f"cannot reach the bucket s3://{self.bucket}{at}: {exc}"
            ) from None

    def object_key(self, key: str) -> str:
        parts = key.split("/")
        if not key or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"invalid file key {key!r}")
        return self._prefix + key

    def writer(self, key: str) -> S3Writer:
        return S3Writer(self, key)

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(
            self.client.put_object, Bucket=self.bucket, Key=self.object_key(key), Body=data
        )

    async def size(self, key: str) -> int | None:
        try:
            head = await asyncio.to_thread(
                self.client.head_object, Bucket=self.bucket, Key=self.object_key(key)
            )
        except Exception as exc:
            if _missing(exc):
                return None
            raise
        return head["ContentLength"]

    async def read(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        if start >= end:
            return
        answer = await asyncio.to_thread(
            self.client.get_object, Bucket=self.bucket, Key=self.object_key(key),
            Range=f"bytes={start}-{end - 1}",
        )  # fmt: skip
        body = answer["Body"]
        try:
            while chunk := await asyncio.to_thread(body.read, _READ_CHUNK):
                yield chunk
        finally:
            body.close()

    async def delete(self, key: str | None) -> None:
        if key is not None:
            await asyncio.to_thread(self._delete, self.object_key(key))

    def _delete(self, object_key: str) -> None:
        """The object, and any unfinished upload of it (a writer that died mid-upload)."""
        self.client.delete_object(Bucket=self.bucket, Key=object_key)
        for upload in self._uploads(object_key):
            if upload["Key"] == object_key:
                self.abort_upload(object_key, upload["UploadId"])

    def _uploads(self, prefix: str) -> Iterator[dict]:
        pages = self.client.get_paginator("list_multipart_uploads")
        for page in pages.paginate(Bucket=self.bucket, Prefix=prefix):
            yield from page.get("Uploads", [])

    def abort_upload(self, object_key: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(
                Bucket=self.bucket, Key=object_key, UploadId=upload_id
            )
        except Exception as exc:
            if not _missing(exc):
                raise

    @contextmanager
    def local_copy(self, key: str) -> Iterator[Path]:
        path = self._spooled(key)
        try:
            try:
                self.client.download_file(self.bucket, self.object_key(key), str(path))
            except Exception as exc:
                if _missing(exc):
                    raise FileNotFoundError(f"no file {key!r}") from None
                raise
            yield path
        finally:
            path.unlink(missing_ok=True)

    @contextmanager
    def local_target(self, key: str) -> Iterator[Path]:
        path = self._spooled(key)
        try:
            yield path
            # boto3's transfer sends a large file as a multipart upload, a part at a time.
            self.client.upload_file(str(path), self.bucket, self.object_key(key))
        finally:
            path.unlink(missing_ok=True)

    def _spooled(self, key: str) -> Path:
        """A fresh temporary path for `key` (its suffix kept: the engine reads it)."""
        self._spool.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(suffix=Path(key).suffix, dir=self._spool)
        os.close(fd)
        return Path(name)

    def free_bytes(self) -> None:
        """None: a bucket has no free-space bound to keep (what an upload spools on this
        machine is written part by part and never held whole, see `S3Writer`)."""
        return None

    async def stale(self, prefix: str, older_than_ms: int) -> list[str]:
        return await asyncio.to_thread(self._stale, prefix, older_than_ms)

    def _stale(self, prefix: str, older_than_ms: int) -> list[str]:
        """Objects, and unfinished uploads, under `prefix` older than the cutoff."""
        found = set()
        pages = self.client.get_paginator("list_objects_v2")
        for page in pages.paginate(Bucket=self.bucket, Prefix=self._prefix + prefix):
            for item in page.get("Contents", []):
                if item["LastModified"].timestamp() * 1000 < older_than_ms:
                    found.add(item["Key"])
        for upload in self._uploads(self._prefix + prefix):
            if upload["Initiated"].timestamp() * 1000 < older_than_ms:
                found.add(upload["Key"])
        return sorted(key.removeprefix(self._prefix) for key in found)

    def direct_link(self, key: str, expires_ms: int, now_ms: int) -> str | None:
        """With AVATAR_S3_PRESIGNED: a presigned GET of the blob, valid until `expires_ms`
        at the latest (S3 counts whole seconds from the signing); else None, as when less
        than a second is left."""
        seconds = min((expires_ms - now_ms) // 1000, _PRESIGN_MAX_S)
        if not self.presigned or seconds < 1:
            return None
        return self.client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": self.object_key(key)},
            ExpiresIn=seconds,
        )
