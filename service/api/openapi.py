"""Documents the real error responses in the OpenAPI schema.

Litestar documents a generic `{status_code, detail, extra}` body for validation errors; every
error here has the `{"error": {...}}` body instead, so the generated operations are rewritten
once at start-up to reference that schema for the statuses each one can answer."""

from __future__ import annotations

import msgspec
from litestar import Litestar
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, Operation, Reference

from service.api.errors import ErrorBody

_DESCRIPTIONS = {
    "400": "BAD_REQUEST: the body is not parseable JSON or multipart.",
    "401": "UNAUTHORIZED: no, unknown or revoked API key.",
    "403": "SIGNATURE_INVALID or URL_EXPIRED: the signed link does not grant this (FORBIDDEN:"
    " a premade voice profile cannot be deleted).",
    "404": "NOT_FOUND: unknown id, or a resource of another owner.",
    "409": "TASK_FINISHED or CONFLICT: the task's status does not allow this.",
    "410": "RESULT_EXPIRED: the result is past its availability, or was deleted.",
    "413": "PAYLOAD_TOO_LARGE: the body is over its limit.",
    "415": "UNSUPPORTED_MEDIA_TYPE: the body is not of the content type this takes.",
    "416": "RANGE_NOT_SATISFIABLE: the Range lies outside the file.",
    "422": "VALIDATION_ERROR: a parameter is missing, of the wrong type or out of range.",
    "502": "UPSTREAM_ERROR: a speech engine or backend failed; the message says why.",
    "429": "RATE_LIMITED: this API key's request budget is spent; see Retry-After.",
    "503": "QUEUE_FULL: the owner's queue of waiting tasks is full; see Retry-After.",
}
_DECLARED = {"403", "409", "410", "415", "416", "502", "503"}


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """`responses=` declaring error statuses only some handlers answer (those of `_DECLARED`);
    `document_errors` gives them the error body."""
    return {
        status: ResponseSpec(None, description=_DESCRIPTIONS[str(status)]) for status in statuses
    }


def _error_statuses(path: str, operation: Operation) -> list[str]:
    # Statuses only some handlers answer, which they declare themselves (`responses=`).
    declared = {code for code in operation.responses or {} if code in _DECLARED}
    statuses = declared | ({"404"} if "{" in path else set())
    if any(getattr(p, "param_in", None) == "query" for p in operation.parameters or []):
        statuses.add("422")
    if operation.request_body is not None:
        statuses |= {"400", "413", "422"}
    if path.startswith("/v1/"):
        statuses |= {"401", "429"}
    return sorted(statuses)


def _error_response(status: str) -> OpenAPIResponse:
    return OpenAPIResponse(
        description=_DESCRIPTIONS[status],
        content={
            "application/json": OpenAPIMediaType(schema=Reference("#/components/schemas/Error"))
        },
    )


def document_errors(app: Litestar) -> None:
    schema = app.openapi_schema
    _, definitions = msgspec.json.schema_components(
        [ErrorBody], ref_template="#/components/schemas/{name}"
    )
    definitions["Error"] = definitions.pop("ErrorBody")
    schema.components.schemas = {**(schema.components.schemas or {}), **definitions}
    for path, item in (schema.paths or {}).items():
        for method in ("get", "post", "put", "patch", "delete"):
            operation = getattr(item, method, None)
            if operation is None:
                continue
            responses = {
                code: response
                for code, response in (operation.responses or {}).items()
                if not code.startswith(("4", "5"))
            }
            for status in _error_statuses(path, operation):
                responses[status] = _error_response(status)
            operation.responses = responses
