"""The store interface over PostgreSQL (psycopg 3), for several nodes sharing one database.
Needs the `cluster` extra; importing this package without it raises ImportError saying so."""

from service.store.postgres.connection import describe
from service.store.postgres.store import PostgresStore, open_postgres

__all__ = ["PostgresStore", "describe", "open_postgres"]
