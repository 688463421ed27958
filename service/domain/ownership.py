"""The one ownership rule of the API (docs/api.md, "Conventions"): a record of another
owner is answered exactly like a missing one, so no caller can learn that someone else's id
exists."""

from __future__ import annotations

from typing import Protocol, TypeVar

from service.domain.errors import NotFound, echo


class Owned(Protocol):
    owner_id: str


RecordT = TypeVar("RecordT", bound=Owned)


def require_owned(record: RecordT | None, owner_id: str, kind: str, record_id: str) -> RecordT:
    """`record` when it exists and belongs to `owner_id`; otherwise NotFound."""
    if record is None or record.owner_id != owner_id:
        raise NotFound(f"No {kind} {echo(record_id)}.")
    return record
