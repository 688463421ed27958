"""Resource ids: a type prefix and 128 random bits from `secrets` (route and session ids are
bearer capabilities, so they must be unguessable)."""

from __future__ import annotations

import secrets

PREFIXES = ("agt", "rt", "ses", "tsk", "av", "key", "own", "usg", "cnv", "vp", "sp", "img")


def new_id(prefix: str) -> str:
    if prefix not in PREFIXES:
        raise ValueError(f"unknown id prefix {prefix!r}")
    # 16 bytes = 128 bits; token_urlsafe keeps ids short and URL-safe.
    return f"{prefix}_{secrets.token_urlsafe(16)}"
