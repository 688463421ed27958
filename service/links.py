"""How a link names this service when no AVATAR_PUBLIC_URL says it."""

from __future__ import annotations

import socket


def authority(host: str, port: int | None) -> str:
    """`host[:port]` as a link may name a listening address: a wildcard address (0.0.0.0, ::)
    by this machine's host name, never as such, and an IPv6 address in brackets."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"
