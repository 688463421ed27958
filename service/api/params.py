"""Query (and header) parameters, and how they are documented.

A handler receives an optional text parameter as `str | None` (None when absent), and a
parameter whose absence the domain answers itself (with its own error, e.g. a link without its
signature is 403) the same way. A query value is never null, so `text` documents each as a plain
string (an enum when its values are fixed), required or not: generators then make an optional
argument of it, not a nullable one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from litestar.params import Parameter

from service.domain.pagination import MAX_LIMIT


def text(
    description: str,
    *,
    required: bool = False,
    enum: Iterable[str] = (),
    header: str | None = None,
) -> Any:
    """The `Parameter` of a `str | None` parameter (in the query, or the named `header`),
    documented as said above."""
    schema: dict[str, Any] = {"type": "string", "one_of": None}
    if values := list(enum):
        schema["enum"] = values
    return Parameter(header=header, description=description, required=required, schema_extra=schema)


Limit = Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description="Page size (1..200).")]
Cursor = Annotated[str | None, text("Opaque cursor: the next_cursor of the previous page.")]
RangeHeader = Annotated[
    str | None,
    text("One byte range of the file, e.g. bytes=0-1023 (206 answers it).", header="Range"),
]
