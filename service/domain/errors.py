"""The service's error hierarchy. Domain code and the responders raise these;
`service.api.errors` maps them to HTTP. A leaf: it imports nothing of the service."""

from __future__ import annotations

from typing import Any

# The most of what a client sent (an id, a field name) an error message repeats.
ECHO_CHARS = 100


def clip(text: str) -> str:
    """`text` as a message may repeat it: its first ECHO_CHARS characters, then "…"."""
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


def echo(text: str) -> str:
    """`clip(text)` quoted, with control characters escaped (a message is also logged)."""
    return repr(clip(text))


class ServiceError(Exception):
    """Base of every error the service reports to a client."""

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class BadRequest(ServiceError):
    """The body cannot be parsed at all (malformed JSON or multipart)."""


class Unauthorized(ServiceError):
    """No API key, or an unknown or revoked one."""


class NotFound(ServiceError):
    """Unknown id, or a resource of another owner (never revealed as existing)."""


class PayloadTooLarge(ServiceError):
    """A body or upload over its size limit."""


class RequestTimeout(ServiceError):
    """A request body that stopped arriving (a pause longer than the idle limit)."""


class InsufficientStorage(ServiceError):
    """Too little free space to take an upload; retry later."""


class UnsupportedMediaType(ServiceError):
    """A body sent with a content type the endpoint does not take."""


class ValidationFailed(ServiceError):
    """A parameter is missing, of the wrong type or out of range; `details` lists the fields."""

    def __init__(self, message: str, details: list[dict[str, str]] | None = None) -> None:
        super().__init__(message, details or [])

    @classmethod
    def field(cls, field: str, message: str) -> ValidationFailed:
        field = clip(field)  # some names come from the client (a multipart part's)
        return cls(f"{field}: {message}", [{"field": field, "message": message}])


class RateLimited(ServiceError):
    """The API key used up its request budget; retry after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IdempotencyKeyReused(ValidationFailed):
    """An Idempotency-Key repeated with a different request."""


class InvalidVideo(ServiceError):
    """An uploaded video breaks an input limit; `details` = {limit, actual, allowed}."""


class TargetNotLarger(ServiceError):
    """The fitted output would not be larger than the source."""


class Conflict(ServiceError):
    """The request does not fit the resource's current state."""


class TaskFinished(Conflict):
    """A cancel of a task that already completed, failed or timed out."""


class ResultExpired(ServiceError):
    """A task's result is past its availability period (or was deleted)."""


class Forbidden(ServiceError):
    """A public link that does not grant what it is used for."""


class SignatureInvalid(Forbidden):
    """A signed file link whose signature does not verify."""


class UrlExpired(Forbidden):
    """A signed file link past its own expiry."""


class RangeNotSatisfiable(ServiceError):
    """A byte range outside the file; `size` goes into Content-Range."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


class QueueFull(ServiceError):
    """The owner has as many waiting tasks as the queue holds; retry after `retry_after` s."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidAudio(ServiceError):
    """Audio that cannot be decoded, or breaks a limit (its length)."""


class UpstreamError(ServiceError):
    """An engine or backend the service relies on failed (speech, a language model, a custom
    agent); the message says which and why."""


class UpstreamTimeout(UpstreamError):
    """A backend did not answer within the time the call allows."""


class NotConfigured(ServiceError):
    """The call needs a backend this service is not configured with; the message names the
    setting."""


class ResponderError(UpstreamError):
    """A conversation reply failed. The message is written for the visitor (it names no
    address, key or upstream detail); the details went to the log."""
