"""What the shared store parts ask of a store: reads, runs of write bodies, change marks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from service.domain.pagination import PageRequest
from service.store.shared.steps import Body

T = TypeVar("T")


def after_clause(page: PageRequest, time_column: str, id_column: str) -> tuple[str, list]:
    """SQL condition and parameters selecting rows strictly after the page's cursor."""
    if page.after is None:
        return "", []
    return f" AND ({time_column}, {id_column}) < (?, ?)", [page.after.ms, page.after.id]


class SharedBase:
    """Implemented by SqliteBase and PostgresBase. The markers move when the store's own
    writes change what other processes wait on (`touch()`)."""

    _session_changes: Any
    _task_changes: Any
    _delivery_changes: Any

    async def _read_one(self, sql: str, params: Any, build: Callable[[tuple], T]) -> T | None:
        raise NotImplementedError

    async def _read_all(self, sql: str, params: Any, build: Callable[[tuple], T]) -> list[T]:
        raise NotImplementedError

    async def _run(self, body: Body[T], *, atomic: bool = True) -> T:
        """The body's return value, its statements committed. `atomic=False` lets a body of
        one statement run without BEGIN and COMMIT where the database allows (PostgreSQL)."""
        raise NotImplementedError
