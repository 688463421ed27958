"""The clone task's multipart form, streamed: each `audio_samples` file part goes into the file
store as it arrives (under the task's id; memory stays flat), `annotation_list` and the text
parts are kept. Limits are enforced as bytes arrive: a sample over its size, too many samples,
an annotation file or a text part too long. Whatever goes wrong, the samples already stored are
removed and the error is raised. (`service.api.upload` streams the one-file forms the same way.)"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from litestar import Request
from litestar.exceptions import InternalServerException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from multipart import MultipartError, MultipartSegment, PushMultipartParser, parse_options_header

from service.api.upload import TEXT_PART_MAX_BYTES
from service.domain import cloning
from service.domain.cloning import StoredSample
from service.domain.errors import (
    BadRequest,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
)
from service.domain.files import BlobWriter, FileStore

# The whole body: every sample at its limit, the annotations and the framing.
BODY_LIMIT = cloning.MAX_SAMPLES * cloning.MAX_SAMPLE_BYTES + 2 * 1024 * 1024
_MAX_PARTS = cloning.MAX_SAMPLES + len(cloning.TEXT_FIELDS) + 2


@dataclass(frozen=True)
class CloneForm:
    samples: list[StoredSample]
    annotations: bytes | None
    fields: dict[str, str]


def _parser(content_type: str | None) -> PushMultipartParser:
    media_type, options = parse_options_header(content_type or "")
    if media_type != "multipart/form-data":
        raise UnsupportedMediaType(
            "The body must be multipart/form-data: `audio_samples` files, an `annotation_list`"
            " file and text parts."
        )
    if not options.get("boundary"):
        raise BadRequest("The multipart Content-Type has no boundary.")
    try:
        return PushMultipartParser(options["boundary"], max_segment_count=_MAX_PARTS)
    except MultipartError as exc:
        raise BadRequest(f"The multipart boundary is not valid: {exc}.") from None


async def receive_clone_form(request: Request, files: FileStore, task_id: str) -> CloneForm:
    parser = _parser(request.headers.get("content-type"))
    receiver = _Receiver(files, task_id)
    try:
        async for chunk in request.stream():
            for event in parser.parse(chunk):
                await receiver.take(event)
        return CloneForm(receiver.samples, receiver.annotations, receiver.fields)
    except MultipartError as exc:
        await receiver.abort()
        raise BadRequest(f"The multipart body is malformed: {exc}.") from None
    except RequestEntityTooLarge:
        await receiver.abort()
        raise PayloadTooLarge(
            f"The form is larger than the {BODY_LIMIT:,} bytes allowed."
        ) from None
    except InternalServerException:  # Litestar's word for a client gone mid-body
        await receiver.abort()
        raise BadRequest("The upload ended before it was complete.") from None
    except BaseException:
        await receiver.abort()
        raise


@dataclass
class _Receiver:
    files: FileStore
    task_id: str
    samples: list[StoredSample] = field(default_factory=list)
    annotations: bytes | None = None
    fields: dict[str, str] = field(default_factory=dict)
    part: str | None = None
    file_name: str = ""
    writer: BlobWriter | None = None
    hasher: Any = None
    size: int = 0
    data: bytearray = field(default_factory=bytearray)

    async def take(self, event: MultipartSegment | bytes | None) -> None:
        if isinstance(event, MultipartSegment):
            self._start(event.name or "", event.filename)
        elif event is None:
            await self._end()
        elif self.writer is not None:
            await self._sample_bytes(event)
        else:
            self._kept_bytes(event)

    def _start(self, name: str, file_name: str | None) -> None:
        allowed = (cloning.SAMPLES, cloning.ANNOTATIONS, *cloning.TEXT_FIELDS)
        if name not in allowed:
            message = f"is not a part of this form; it takes {', '.join(allowed)}"
            raise ValidationFailed.field(name or "(unnamed part)", message)
        if name in self.fields or (name == cloning.ANNOTATIONS and self.annotations is not None):
            raise ValidationFailed.field(name, "is given more than once")
        self.part = name
        if name == cloning.SAMPLES:
            if len(self.samples) == cloning.MAX_SAMPLES:
                raise ValidationFailed.field(name, f"must be at most {cloning.MAX_SAMPLES} files")
            if not file_name or any(s.file_name == file_name for s in self.samples):
                raise ValidationFailed.field(name, "each file needs its own file name")
            key = cloning.sample_key(self.task_id, len(self.samples))
            self.file_name, self.writer = file_name, self.files.writer(key)
            self.hasher, self.size = hashlib.sha256(), 0

    async def _sample_bytes(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > cloning.MAX_SAMPLE_BYTES:
            limit = cloning.MAX_SAMPLE_BYTES
            raise PayloadTooLarge(f"Sample {self.file_name} is larger than {limit:,} bytes.")
        await self.writer.write(chunk)
        self.hasher.update(chunk)

    def _kept_bytes(self, chunk: bytes) -> None:
        limit = (
            cloning.MAX_ANNOTATIONS_BYTES if self.part == cloning.ANNOTATIONS
            else TEXT_PART_MAX_BYTES
        )  # fmt: skip
        if len(self.data) + len(chunk) > limit:
            raise ValidationFailed.field(self.part, f"must be at most {limit} bytes")
        self.data += chunk

    async def _end(self) -> None:
        if self.writer is not None:
            await self.writer.commit()
            key = cloning.sample_key(self.task_id, len(self.samples))
            self.samples.append(StoredSample(key, self.file_name, self.hasher.hexdigest()))
            self.writer = None
        elif self.part == cloning.ANNOTATIONS:
            self.annotations = bytes(self.data)
        else:
            try:
                self.fields[self.part] = self.data.decode()
            except UnicodeDecodeError:
                raise ValidationFailed.field(self.part, "must be UTF-8 text") from None
        self.data, self.part = bytearray(), None

    async def abort(self) -> None:
        if self.writer is not None:
            await self.writer.abort()
        for sample in self.samples:
            await self.files.delete(sample.key)
