"""The one place where errors become HTTP responses, all with the body
`{"error": {"code", "message", "details"?}}` and never a stack trace."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from service.api.body_limits import BODY_UNREAD
from service.api.declared import allow_header
from service.domain import errors

log = logging.getLogger("service.api")

# ServiceError subclass -> (HTTP status, error code). An error takes the row of the nearest
# class in its MRO, so a subclass without a row of its own answers as its parent does.
ERROR_TABLE: dict[type[errors.ServiceError], tuple[int, str]] = {
    errors.BadRequest: (400, "BAD_REQUEST"),
    errors.Unauthorized: (401, "UNAUTHORIZED"),
    errors.SignatureInvalid: (403, "SIGNATURE_INVALID"),
    errors.UrlExpired: (403, "URL_EXPIRED"),
    errors.Forbidden: (403, "FORBIDDEN"),
    errors.NotFound: (404, "NOT_FOUND"),
    errors.RequestTimeout: (408, "REQUEST_TIMEOUT"),
    errors.TaskFinished: (409, "TASK_FINISHED"),
    errors.Conflict: (409, "CONFLICT"),
    errors.ResultExpired: (410, "RESULT_EXPIRED"),
    errors.PayloadTooLarge: (413, "PAYLOAD_TOO_LARGE"),
    errors.UnsupportedMediaType: (415, "UNSUPPORTED_MEDIA_TYPE"),
    errors.RangeNotSatisfiable: (416, "RANGE_NOT_SATISFIABLE"),
    errors.IdempotencyKeyReused: (422, "IDEMPOTENCY_KEY_REUSED"),
    errors.InvalidVideo: (422, "INVALID_VIDEO"),
    errors.InvalidAudio: (422, "INVALID_AUDIO"),
    errors.TargetNotLarger: (422, "TARGET_NOT_LARGER"),
    errors.ValidationFailed: (422, "VALIDATION_ERROR"),
    errors.RateLimited: (429, "RATE_LIMITED"),
    errors.UpstreamError: (502, "UPSTREAM_ERROR"),
    errors.NotConfigured: (503, "NOT_CONFIGURED"),
    errors.UpstreamTimeout: (504, "UPSTREAM_TIMEOUT"),
    errors.QueueFull: (503, "QUEUE_FULL"),
    errors.InsufficientStorage: (507, "INSUFFICIENT_STORAGE"),
}

# Framework errors (routing, body limits, parsing) by status -> (status, code, message).
_HTTP_STATUS_CODES: dict[int, tuple[int, str, str]] = {
    400: (400, "BAD_REQUEST", "The request body could not be parsed."),
    401: (401, "UNAUTHORIZED", "A valid API key is required."),
    404: (404, "NOT_FOUND", "There is nothing at this path."),
    405: (405, "METHOD_NOT_ALLOWED", "This path does not accept this HTTP method."),
    413: (413, "PAYLOAD_TOO_LARGE", "The request body is larger than this endpoint accepts."),
    415: (415, "UNSUPPORTED_MEDIA_TYPE", "This endpoint does not accept that content type."),
}

_JSON = "application/json"


class ErrorInfo(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    details: Any = None


class Error(msgspec.Struct):
    """The body of every error answer."""

    error: ErrorInfo


def _error_body(code: str, message: str, details: Any = None) -> bytes:
    return msgspec.json.encode(Error(ErrorInfo(code, message, details)))


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: dict | None = None
) -> Response:
    body = _error_body(code, message, details)
    return Response(content=body, status_code=status, media_type=_JSON, headers=headers)


def _status_and_code(exc: errors.ServiceError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]
    return 500, "INTERNAL_ERROR"


def service_error_parts(exc: errors.ServiceError) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, JSON body) of the answer to `exc`."""
    status, code = _status_and_code(exc)
    headers = {}
    if isinstance(exc, errors.Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, (errors.RateLimited, errors.QueueFull)):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, errors.RangeNotSatisfiable):
        headers["Content-Range"] = f"bytes */{exc.size}"
    return status, headers, _error_body(code, exc.message, exc.details)


def _close_if_unread(request: Request, headers: dict[str, str]) -> dict[str, str]:
    """An answer given before the end of the request's body closes the connection: the
    server would otherwise wait for the rest, which the client may never send."""
    if request.scope.get(BODY_UNREAD):
        headers["Connection"] = "close"
    return headers


def handle_service_error(request: Request, exc: errors.ServiceError) -> Response:
    status, headers, body = service_error_parts(exc)
    headers = _close_if_unread(request, headers)
    return Response(content=body, status_code=status, media_type=_JSON, headers=headers or None)


def _validation_details(exc: ValidationException) -> list[dict[str, str]]:
    details = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            field, message = str(item.get("key", "")), str(item.get("message"))
            details.append({"field": errors.clip(field), "message": errors.clip(message)})
    return details


def handle_http_exception(request: Request, exc: HTTPException) -> Response:
    if isinstance(exc, ValidationException):
        details = _validation_details(exc)
        summary = "; ".join(f"{d['field']}: {d['message']}" for d in details) or "Invalid request."
        return error_response(422, "VALIDATION_ERROR", summary, details)
    status, code, message = _HTTP_STATUS_CODES.get(
        exc.status_code, (exc.status_code, "HTTP_ERROR", "The request cannot be served.")
    )
    if status >= 500:
        return handle_unexpected(request, exc)
    # Litestar's router names the header "allow"; RFC 9110 requires it on every 405.
    allow = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("allow")
    if status == 405 and allow and allow.strip().upper() == "WEBSOCKET":
        return _upgrade_required(request)
    headers = _close_if_unread(request, {"Allow": allow_header(allow)} if allow else {})
    return error_response(status, code, message, headers=headers or None)


def _upgrade_required(request: Request) -> Response:
    """A plain request to a conversation socket's path: RFC 6455 answers it 426 naming the
    protocol to upgrade to (a 405 would list no method the caller could use)."""
    headers = _close_if_unread(request, {"Upgrade": "websocket", "Connection": "Upgrade"})
    message = "This path is a conversation socket: open it as a WebSocket."
    return error_response(426, "UPGRADE_REQUIRED", message, headers=headers)


def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "INTERNAL_ERROR", "An internal error occurred.")


EXCEPTION_HANDLERS = {
    errors.ServiceError: handle_service_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
