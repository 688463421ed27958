"""Strict JSON request bodies.

Litestar converts `data` parameters in lax mode (it would accept "5" or 5.0 for an integer),
while the API promises that strings, floats and booleans are refused where an integer is
expected. So handlers read the raw body and decode it here with msgspec in strict mode, and
`json_body` documents the same Struct as the operation's request body in the OpenAPI schema."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody

from service.api.body_limits import body_limits
from service.api.openapi import ApiOperation
from service.domain.errors import BadRequest, ValidationFailed, clip

T = TypeVar("T")

_AT_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_UNKNOWN_FIELD = re.compile(r"unknown field `(?P<name>[^`]*)`")
_MISSING_FIELD = re.compile(r"missing required field `(?P<name>[^`]*)`")


@cache
def _decoder(struct_type: type) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(struct_type)


def _validation_detail(message: str) -> tuple[str, str]:
    """Split msgspec's "Expected `int`, got `str` - at `$.field`" into (field, message)."""
    path = ""
    if match := _AT_PATH.search(message):
        path = match["path"].lstrip(".")
        message = message[: match.start()]
    if (named := _UNKNOWN_FIELD.search(message)) or (named := _MISSING_FIELD.search(message)):
        name = clip(named["name"])  # a client's field name, repeated at most ECHO_CHARS long
        message = message[: named.start("name")] + name + message[named.end("name") :]
        path = f"{path}.{name}" if path else name
    return clip(path) or "body", message


def _check_utf8(body: bytes) -> None:
    """JSON is UTF-8 (RFC 8259). Checked before decoding: msgspec raises UnicodeDecodeError
    only for a string it reads, after any unknown field it meets first, and never for the
    values it skips."""
    if body.isascii():  # most bodies, at a fraction of the cost of decoding them
        return
    try:
        body.decode()
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"The body is not valid JSON: byte {exc.start} is not part of UTF-8 text."
        ) from None


def decode_json(body: bytes, struct_type: type[T]) -> T:
    """Decode `body` as `struct_type`; an empty body counts as `{}` (every field omitted)."""
    _check_utf8(body)
    try:
        return _decoder(struct_type).decode(body.strip() or b"{}")
    except msgspec.ValidationError as exc:
        field, message = _validation_detail(str(exc))
        detail = {"field": field, "message": message}
        raise ValidationFailed(f"{field}: {message}", [detail]) from None
    except msgspec.DecodeError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}") from None
    except RecursionError:  # msgspec's guard against deeply nested input (e.g. in `tools`)
        raise BadRequest("The body's JSON is nested too deeply.") from None


async def read_json(request: Request, struct_type: type[T]) -> T:
    """The request's JSON body as `struct_type`, read within AVATAR_UPLOAD_IDLE_S pauses."""
    body = b"".join([chunk async for chunk in body_limits(request).chunks(request)])
    return decode_json(body, struct_type)


def _inline_schema(struct_type: type) -> dict[str, Any]:
    """The JSON schema of `struct_type` with nested Structs written out in place: the
    document's components hold only what Litestar registers (request bodies nest no cycles)."""
    (schema,), definitions = msgspec.json.schema_components([struct_type], ref_template="{name}")

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    return inline(schema)


def json_body(struct_type: type, *, required: bool = True) -> type[Operation]:
    """An `operation_class` documenting `struct_type` as the JSON request body."""

    @dataclass
    class JsonBodyOperation(ApiOperation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                content={"application/json": OpenAPIMediaType(schema=_inline_schema(struct_type))},
                required=required,
            )
            super().__post_init__()

    return JsonBodyOperation
