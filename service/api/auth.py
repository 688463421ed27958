"""The per-worker state behind API key authentication (checked in `frontdoor`): the key
authenticator with its short-lived cache, and the per-key rate limiter."""

from __future__ import annotations

from service.api.ratelimit import RateLimiter
from service.domain.context import Context
from service.domain.keys import KeyAuthenticator


def install(state, ctx: Context) -> None:
    """Put the authenticator and this worker's share of the rate limit on the app state."""
    share = ctx.settings.rate_limit / ctx.settings.http_workers
    state["authenticator"] = KeyAuthenticator(ctx)
    state["rate_limiter"] = RateLimiter(share)
