"""The embedded SQLite store."""

from service.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
