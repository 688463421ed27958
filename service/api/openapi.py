"""How the API's operations are declared, so that the OpenAPI document tells the truth and
client generators accept it whole.

Handlers use `get`, `post` and `delete` from here instead of Litestar's. Each operation is built
by `ApiOperation`, which documents the `{"error": {...}}` body (the `Error` component) for every
error status the operation can answer, in place of Litestar's generic validation answer (this
service answers validation errors with 422, not 400). `get` also declares HEAD, which the
front door serves as GET without a body (`service.api.frontdoor`), documented without content.
`file_download` documents a binary answer (200, and 206 for a `Range`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litestar import delete as litestar_delete
from litestar import post as litestar_post
from litestar import route
from litestar.enums import HttpMethod
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import (
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    Schema,
)

from service.api.errors import Error

_DESCRIPTIONS = {
    "400": "BAD_REQUEST: the body is not parseable JSON or multipart.",
    "401": "UNAUTHORIZED: no, unknown or revoked API key.",
    "403": "SIGNATURE_INVALID or URL_EXPIRED: the signed link does not grant this (FORBIDDEN:"
    " a premade voice profile cannot be deleted).",
    "404": "NOT_FOUND: unknown id, or a resource of another owner.",
    "408": "REQUEST_TIMEOUT: the request body paused longer than AVATAR_UPLOAD_IDLE_S.",
    "409": "TASK_FINISHED or CONFLICT: the task's status does not allow this.",
    "410": "RESULT_EXPIRED: the result is past its availability, or was deleted.",
    "413": "PAYLOAD_TOO_LARGE: the body is over its limit.",
    "415": "UNSUPPORTED_MEDIA_TYPE: the body is not of the content type this takes.",
    "416": "RANGE_NOT_SATISFIABLE: the Range lies outside the file.",
    "422": "VALIDATION_ERROR: a parameter is missing, unknown, of the wrong type or out of range.",
    "429": "RATE_LIMITED: this API key's request budget is spent; see Retry-After.",
    "502": "UPSTREAM_ERROR: an engine or backend failed; the message says why.",
    "503": "QUEUE_FULL: the owner's queue of waiting tasks is full; see Retry-After"
    " (NOT_CONFIGURED: the call needs a backend the service has no setting for).",
    "504": "UPSTREAM_TIMEOUT: the backend did not answer within the call's time limit.",
    "507": "INSUFFICIENT_STORAGE: the upload would leave less free disk than the service keeps.",
}
# Statuses only some operations answer: each declares them (`error_responses`).
_DECLARED = {"403", "409", "410", "415", "416", "502", "503", "504", "507"}
# Statuses `ApiOperation` finds out from the operation itself: every handler offers them, and
# the operation keeps those it can answer.
_INFERRED = (400, 401, 404, 408, 413, 422, 429)
# Operation ids are the handlers' names (a generated client's function names); HEAD's carry this.
HEAD_PREFIX = "head_"


def operation_id(handler: HTTPRouteHandler, method: str, _path: list[Any]) -> str:
    """The handler's own name (unique in the app; Litestar checks), `head_` + it for HEAD."""
    prefix = HEAD_PREFIX if method == HttpMethod.HEAD else ""
    return prefix + handler.handler_name


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """`responses=` declaring the error body for `statuses` (those of `_DECLARED` that the
    handler answers: the others are found out from the operation)."""
    return {
        status: ResponseSpec(Error, description=_DESCRIPTIONS[str(status)], generate_examples=False)
        for status in statuses
    }


@dataclass
class ApiOperation(Operation):
    """An operation documenting the error body for each status it can answer: 401 and 429
    behind the API key, 404 with an id in the path, 422 always (unknown query parameters),
    400, 408, 413 and 422 with a body, and what the handler declares (in place of Litestar's
    generic 400)."""

    def __post_init__(self) -> None:
        answered = self._inferred_statuses() | _DECLARED
        responses = {
            code: response
            for code, response in (self.responses or {}).items()
            if not code.startswith(("4", "5")) or code in answered
        }
        if self.operation_id and self.operation_id.startswith(HEAD_PREFIX):
            responses = {code: _without_content(answer) for code, answer in responses.items()}
        self.responses = dict(sorted(responses.items()))

    def _inferred_statuses(self) -> set[str]:
        # 422: every operation refuses query parameters it does not declare
        # (service.api.declared).
        statuses = {"422"}
        where = {getattr(p, "param_in", None) for p in self.parameters or []}
        if "path" in where:
            statuses.add("404")
        if self.request_body is not None:
            statuses |= {"400", "408", "413", "422"}
        if self.security:
            statuses |= {"401", "429"}
        return statuses


def _without_content(response: OpenAPIResponse | Reference) -> OpenAPIResponse | Reference:
    if isinstance(response, Reference):
        return response
    return OpenAPIResponse(description=response.description, headers=response.headers)


def file_download(media_type: str, *, ranges: bool = True) -> type[Operation]:
    """An `operation_class` for a file answer, binary of `media_type`: the whole file (200) and,
    when `ranges` (served by `service.api.blobs`), one range of it (206)."""
    binary = OpenAPIMediaType(schema=Schema(type="string", format="binary"))
    content_range = OpenAPIHeader(
        schema=Schema(type="string"), description="The range sent: bytes FIRST-LAST/SIZE."
    )
    answers: dict[str, OpenAPIResponse | Reference] = {
        "200": OpenAPIResponse(description="The file.", content={media_type: binary}),
    }
    if ranges:
        answers["206"] = OpenAPIResponse(
            description="The requested byte range of the file.",
            content={media_type: binary},
            headers={"Content-Range": content_range},
        )

    @dataclass
    class FileDownload(ApiOperation):
        def __post_init__(self) -> None:
            self.responses = {**(self.responses or {}), **answers}
            super().__post_init__()

    return FileDownload


def _documented(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        **kwargs,
        "operation_class": kwargs.get("operation_class", ApiOperation),
        "responses": {**error_responses(*_INFERRED), **kwargs.get("responses", {})},
    }


def get(path: str | None = None, **kwargs: Any) -> Callable[..., HTTPRouteHandler]:
    """A GET handler that HEAD reaches too, both documented."""
    return route(path, http_method=[HttpMethod.GET, HttpMethod.HEAD], **_documented(kwargs))


def post(path: str | None = None, **kwargs: Any) -> Callable[..., HTTPRouteHandler]:
    return litestar_post(path, **_documented(kwargs))


def delete(path: str | None = None, **kwargs: Any) -> Callable[..., HTTPRouteHandler]:
    return litestar_delete(path, **_documented(kwargs))
