"""Query parameters shared by list endpoints."""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter

from service.domain.pagination import MAX_LIMIT

Limit = Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description="Page size (1..200).")]
Cursor = Annotated[
    str | None, Parameter(description="Opaque cursor: the next_cursor of the previous page.")
]
