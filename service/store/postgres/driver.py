"""psycopg and its pool, imported here only: they come with the `cluster` extra, and a
process that never uses PostgreSQL must not need them."""

from __future__ import annotations

try:
    import psycopg
    import psycopg.conninfo
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "AVATAR_DATABASE_URL needs psycopg 3 and psycopg_pool:"
        " pip install 'avatar-service[cluster]'"
    ) from exc

TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK

__all__ = ["TUPLES_OK", "psycopg", "psycopg_pool"]
