"""Streaming multipart/form-data uploads: the file part goes straight into the file store as
it arrives (memory stays flat whatever its size), a few small text parts are kept.

Litestar's own form parsing spools a file to an anonymous temporary file and reads the whole
form before the handler runs; here the body is parsed as it streams in, so an upload over its
limit is refused the moment it crosses it and nothing of it is kept. The route's
`request_max_body_size` (see `body_limit`) bounds the whole body including the multipart
framing; the file's own limit is enforced here."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from litestar import Request
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody
from multipart import MultipartError, MultipartSegment, PushMultipartParser, parse_options_header

from service.api.body_limits import body_limits, leave_unread
from service.api.openapi import ApiOperation
from service.domain.errors import (
    BadRequest,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
    clip,
)
from service.domain.files import BlobWriter, FileStore

# Room for the boundaries, part headers and text parts around a file at its limit.
FRAMING_ALLOWANCE = 1024 * 1024
# A text part longer than this is refused as it arrives (its own rule may be stricter).
TEXT_PART_MAX_BYTES = 8 * 1024
# A form here has a handful of parts; more is not a form this service reads.
_MAX_PARTS = 16


def body_limit(max_file_bytes: int) -> int:
    """The `request_max_body_size` of a route taking a file of up to `max_file_bytes`."""
    return max_file_bytes + FRAMING_ALLOWANCE


@dataclass(frozen=True)
class UploadForm:
    """The parts an upload takes: one file part (required) and optional text parts."""

    file_field: str
    file_description: str  # what the file part holds, for messages ("the video")
    text_fields: tuple[str, ...]
    max_file_bytes: int
    digest: bool = False  # compute the file's SHA-256 as it streams


@dataclass(frozen=True)
class Upload:
    size: int
    sha256: str | None
    fields: Mapping[str, str]


# Called when the file part begins, with the text parts read so far: it may refuse the
# request (raise) before the file is read.
FileStart = Callable[[Mapping[str, str]], None]


async def receive_upload(
    request: Request,
    files: FileStore,
    key: str,
    form: UploadForm,
    on_file: FileStart | None = None,
) -> Upload:
    """Stream the request's multipart body: the file part into `files` under `key`, the text
    parts into `Upload.fields`, within the limits of `body_limits` (room on disk, a slot of
    the caller's key, no long pause). Whatever goes wrong (a bad body, a limit, a client that
    goes away), nothing is left under `key` and the error is raised."""
    receiver = _Receiver(files, key, form, on_file)
    try:
        parser = _parser(request.headers.get("content-type"), form)
        key_id, declared = request.scope["auth"].key_id, _declared_length(request)
        chunks = body_limits(request).upload_chunks(request, files, key_id, declared)
        async with aclosing(chunks):
            async for chunk in chunks:
                for event in parser.parse(chunk):
                    await receiver.take(event)
        return await receiver.finish()
    except BaseException as exc:
        await receiver.abort()
        leave_unread(request)
        if isinstance(exc, MultipartError):
            raise BadRequest(f"The multipart body is malformed: {_in_words(exc)}.") from None
        if isinstance(exc, RequestEntityTooLarge):
            raise PayloadTooLarge(_too_large(form.max_file_bytes)) from None
        raise


def _declared_length(request: Request) -> int:
    """The Content-Length, or 0 (a chunked body is looked at as it streams in)."""
    try:
        return max(int(request.headers.get("content-length", "0")), 0)
    except ValueError:
        return 0


def _parser(content_type: str | None, form: UploadForm) -> PushMultipartParser:
    media_type, options = parse_options_header(content_type or "")
    if media_type != "multipart/form-data":
        raise UnsupportedMediaType(
            f"The body must be multipart/form-data ({form.file_description} in a part named "
            f"`{form.file_field}`)."
        )
    boundary = options.get("boundary")
    if not boundary:
        raise BadRequest("The multipart Content-Type has no boundary.")
    try:
        return PushMultipartParser(boundary, max_segment_count=_MAX_PARTS)
    except MultipartError as exc:
        raise BadRequest(f"The multipart boundary is not valid: {_in_words(exc)}.") from None


def _in_words(exc: MultipartError) -> str:
    """What the parser found wrong, as a sentence: its own words (the first argument), not
    the exception's repr with the error it may carry (a part's headers that are not UTF-8)."""
    if any(isinstance(arg, UnicodeError) for arg in exc.args):
        return "a part's headers are not UTF-8 text"
    words = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    return clip(words.rstrip(".")) or "it cannot be parsed"


def _too_large(limit: int) -> str:
    return f"The file is larger than the {limit:,} bytes this service accepts."


@dataclass
class _Receiver:
    """Takes the parser's events: a part's start (its headers), its bytes, its end (None)."""

    files: FileStore
    key: str
    form: UploadForm
    on_file: FileStart | None
    fields: dict[str, str] = field(default_factory=dict)
    writer: BlobWriter | None = None
    size: int = 0
    hasher: Any = None
    part: str | None = None  # the name of the part being read
    text: bytearray = field(default_factory=bytearray)

    async def take(self, event: MultipartSegment | bytes | None) -> None:
        if isinstance(event, MultipartSegment):
            self._start(event.name or "")
        elif event is None:
            self._end()
        elif self.part == self.form.file_field:
            await self._file_bytes(event)
        else:
            self._text_bytes(event)

    def _start(self, name: str) -> None:
        form = self.form
        if name != form.file_field and name not in form.text_fields:
            allowed = ", ".join((form.file_field, *form.text_fields))
            raise ValidationFailed.field(
                name or "(unnamed part)", f"is not a part of this form; it takes {allowed}"
            )
        if name in self.fields or (name == form.file_field and self.writer is not None):
            raise ValidationFailed.field(name, "is given more than once")
        self.part = name
        if name == form.file_field:
            if self.on_file is not None:
                self.on_file(self.fields)
            self.writer = self.files.writer(self.key)
            self.hasher = hashlib.sha256() if form.digest else None

    async def _file_bytes(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.form.max_file_bytes:
            raise PayloadTooLarge(_too_large(self.form.max_file_bytes))
        await self.writer.write(chunk)
        if self.hasher is not None:
            self.hasher.update(chunk)

    def _text_bytes(self, chunk: bytes) -> None:
        if len(self.text) + len(chunk) > TEXT_PART_MAX_BYTES:
            raise ValidationFailed.field(self.part, f"must be at most {TEXT_PART_MAX_BYTES} bytes")
        self.text += chunk

    def _end(self) -> None:
        if self.part != self.form.file_field:
            try:
                self.fields[self.part] = self.text.decode()
            except UnicodeDecodeError:
                raise ValidationFailed.field(self.part, "must be UTF-8 text") from None
            self.text = bytearray()
        self.part = None

    async def finish(self) -> Upload:
        if self.writer is None:
            raise ValidationFailed.field(
                self.form.file_field,
                f"is required: {self.form.file_description}, as a multipart file part",
            )
        size = await self.writer.commit()
        digest = self.hasher.hexdigest() if self.hasher is not None else None
        return Upload(size, digest, dict(self.fields))

    async def abort(self) -> None:
        if self.writer is not None:
            await self.writer.abort()


def multipart_body(
    file_field: str, file_description: str, text_fields: Mapping[str, str], *, repeated=False
) -> type[Operation]:
    """An `operation_class` documenting the multipart form as the request body; `repeated`:
    the file part comes several times (an array of files, one part each)."""
    binary = {"type": "string", "format": "binary"}
    if repeated:
        binary = {"type": "array", "items": binary}
    properties: dict[str, Any] = {file_field: binary | {"description": file_description}}
    for name, description in text_fields.items():
        properties[name] = {"type": "string", "description": description}
    schema = {"type": "object", "properties": properties, "required": [file_field]}

    @dataclass
    class MultipartBodyOperation(ApiOperation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                content={"multipart/form-data": OpenAPIMediaType(schema=schema)}, required=True
            )
            super().__post_init__()

    return MultipartBodyOperation
