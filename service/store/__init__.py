"""Persistence behind a small interface (`Store`); SQLite is the embedded implementation."""

from service.store.base import Store

__all__ = ["Store"]
