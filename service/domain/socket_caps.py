"""The caps on open conversation sockets: per client address (AVATAR_MAX_SOCKETS_PER_CLIENT)
and per route (AVATAR_MAX_CONVERSATIONS_PER_ROUTE). A route link needs no key, so without
them one anonymous client could hold any number of sockets, each a conversation.

Each HTTP worker counts the sockets it holds. Sharing the counts between workers would put a
write on every socket's opening and closing, and a worker that dies would leave its counts
behind; counted per worker, a client is never refused below the cap, and with
`--http-workers N` it can hold at most N times the cap."""

from __future__ import annotations

from collections import Counter

# The `reason` of a refusal (the socket is closed with 1013, "try again later").
TOO_MANY_SOCKETS = "too_many_sockets"
ROUTE_FULL = "route_full"


class SocketCaps:
    def __init__(self, per_client: int, per_route: int) -> None:
        self._per_client = per_client
        self._per_route = per_route
        self._clients: Counter[str] = Counter()
        self._routes: Counter[str] = Counter()

    def take(self, client: str, route_id: str | None) -> str | None:
        """Count a new socket of `client` (on `route_id`, for a route's socket) in; or, counting
        nothing, why it is refused."""
        if self._clients[client] >= self._per_client:
            return TOO_MANY_SOCKETS
        if route_id is not None and self._routes[route_id] >= self._per_route:
            return ROUTE_FULL
        self._clients[client] += 1
        if route_id is not None:
            self._routes[route_id] += 1
        return None

    def give_back(self, client: str, route_id: str | None) -> None:
        """The socket `take` counted in has closed."""
        _decrement(self._clients, client)
        if route_id is not None:
            _decrement(self._routes, route_id)


def _decrement(counts: Counter[str], key: str) -> None:
    # Keys at zero are dropped, so the counters hold only what is open.
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]
