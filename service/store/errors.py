"""Errors of opening a store, importable without any database driver."""

from __future__ import annotations


class DatabaseUnavailable(ConnectionError):
    """The shared database cannot be reached or used; the message says where (never with the
    password) and why."""


class FileStoreUnavailable(ConnectionError):
    """The shared file store (an S3 bucket) cannot be reached or used; the message says which
    and why."""
