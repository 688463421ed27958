"""The caps on open conversation sockets: per client address (AVATAR_MAX_SOCKETS_PER_CLIENT)
and per route (AVATAR_MAX_CONVERSATIONS_PER_ROUTE). A route link needs no key, so without
them one anonymous client could hold any number of sockets, each a conversation.

The count is shared by every HTTP worker: each open socket holds a place in the store, taken
in the same write that counts the places already held, so the caps are the same whatever
`--http-workers` is. A worker stamps its holds alive with its conversations; those of a worker
that died stop counting after QUIET_MS, and the sweeper drops them."""

from __future__ import annotations

from service.domain.context import Context
from service.domain.conversations import QUIET_MS
from service.domain.models import SocketHold
from service.domain.turns import Live

# The `reason` of a refusal (the socket is closed with 1013, "try again later").
TOO_MANY_SOCKETS = "too_many_sockets"
ROUTE_FULL = "route_full"
_REASONS = {"client": TOO_MANY_SOCKETS, "route": ROUTE_FULL}


async def hold(ctx: Context, live: Live, client: str) -> str | None:
    """Take a place for `live`'s socket from `client`; or, taking none, why it is refused."""
    now = ctx.clock.now_ms()
    settings = ctx.settings
    full = await ctx.store.hold_socket(
        SocketHold(live.conversation_id, client, live.setup.route_id, now),
        settings.max_sockets_per_client,
        settings.max_conversations_per_route,
        now - QUIET_MS,
    )
    return None if full is None else _REASONS[full]


async def release(ctx: Context, live: Live) -> None:
    """The socket has closed: its place is free."""
    await ctx.store.release_socket(live.conversation_id)
