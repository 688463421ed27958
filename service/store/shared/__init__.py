"""What the SQLite and PostgreSQL stores share: the statements of each write and read, written
once (steps.py says how each database runs them), and the store methods built on them."""
