"""The statements of a write, written once for both databases.

A write's logic is a generator (a "body") that yields `Query` steps and receives each one's
`Result`; each store runs bodies with its own driver (SQLite: on the writer thread, in its
BEGIN IMMEDIATE transaction; PostgreSQL: in a transaction on a pooled connection). SQL is
written in SQLite's spelling with `?` parameters; `Dialect.sql` turns it into the other
database's (see `POSTGRES`). What only one database needs is a step of its own: `Announce`
(other nodes learn of a change by NOTIFY; SQLite processes watch change files the store
touches after the write) and `Serialize` (PostgreSQL's advisory lock; SQLite's writes are
serialized already)."""

from __future__ import annotations

import functools
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

T = TypeVar("T")


class Query(NamedTuple):
    """One statement; the body receives its `Result`, or None with `wait=False` (the driver
    need not fetch rows). `expect` is the number of rows it must touch, checked by the driver
    before the commit, for statements that cannot miss (the row is locked by this
    transaction): a miss is a bug, and the write is rolled back."""

    sql: str
    params: tuple | list = ()
    wait: bool = True
    expect: int | None = None


class Announce(NamedTuple):
    """Tell every node, at commit, that `topic` changed."""

    topic: str


class Serialize(NamedTuple):
    """Make concurrent writes that serialize on (`key`, `name`) run one after another."""

    key: int
    name: str


class Result(NamedTuple):
    rowcount: int
    rows: list[tuple]

    def first(self) -> tuple | None:
        return self.rows[0] if self.rows else None


Step = Query | Announce | Serialize
Body = Generator[Step, Result | None, T]


class LostWrite(RuntimeError):
    """A statement that could not miss touched another number of rows: a bug, never input."""


def check(query: Query, rowcount: int) -> None:
    if query.expect is not None and rowcount != query.expect:
        raise LostWrite(f"{query.expect} row(s) expected, {rowcount} written: {query.sql[:80]}")


def marks(count: int) -> str:
    """`?, ?, ?` for `count` parameters."""
    return ", ".join("?" * count)


def insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks(len(columns))})"


@dataclass(frozen=True)
class Dialect:
    """How one database spells the shared SQL."""

    name: str
    parameter: str  # what stands for `?`
    row_locks: bool  # whether `FOR UPDATE SKIP LOCKED` / `FOR SHARE` are kept

    def sql(self, text: str) -> str:
        return _spell(self, text)


_ROW_LOCK = re.compile(r" FOR (UPDATE SKIP LOCKED|SHARE)\b")


@functools.lru_cache(maxsize=1024)
def _spell(dialect: Dialect, text: str) -> str:
    if not dialect.row_locks:  # SQLite runs one write at a time: nothing to lock rows against
        text = _ROW_LOCK.sub("", text)
    if dialect.parameter != "?":
        text = text.replace("%", "%%").replace("?", dialect.parameter)
    return text


SQLITE = Dialect("sqlite", "?", row_locks=False)
POSTGRES = Dialect("postgresql", "%s", row_locks=True)
