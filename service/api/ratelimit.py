"""Per-key token buckets. With several HTTP workers each enforces its share of the rate."""

from __future__ import annotations

import math

from service.domain.errors import RateLimited

_BUCKET_LIMIT = 10_000


class RateLimiter:
    def __init__(self, rate_per_s: float, burst_factor: float = 2.0) -> None:
        self._rate = rate_per_s / 1000.0  # tokens per millisecond
        self._burst = max(1.0, rate_per_s * burst_factor)
        # key id -> (tokens, time of last refill in ms)
        self._buckets: dict[str, tuple[float, int]] = {}

    def take(self, key_id: str, now_ms: int) -> None:
        """Spend one token of `key_id`'s bucket or raise `RateLimited`."""
        tokens, last = self._buckets.get(key_id, (self._burst, now_ms))
        tokens = min(self._burst, tokens + (now_ms - last) * self._rate)
        if tokens < 1.0:
            self._buckets[key_id] = (tokens, now_ms)
            retry_after = max(1, math.ceil((1.0 - tokens) / self._rate / 1000.0))
            raise RateLimited(
                "Too many requests for this API key; retry after the given seconds.", retry_after
            )
        if len(self._buckets) >= _BUCKET_LIMIT and key_id not in self._buckets:
            self._buckets.clear()
        self._buckets[key_id] = (tokens - 1.0, now_ms)
