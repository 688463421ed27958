"""Owners and API keys: creation, listing, revocation and authentication.

Keys are random 256-bit secrets shown once; only their SHA-256 is stored. A worker caches
hash -> key for `key_cache_ttl_s` so authentication costs no database read on most requests,
and re-reads after that, so a key revoked from another process stops working promptly."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from service.clock import Clock
from service.domain.context import Context
from service.domain.errors import NotFound, Unauthorized, ValidationFailed, echo
from service.domain.ids import new_id
from service.domain.models import ApiKey, Owner
from service.domain.store import Store

KEY_PREFIX = "ak_"
SHOWN_PREFIX_LENGTH = 10
LAST_USED_INTERVAL_MS = 60_000
_CACHE_LIMIT = 10_000
DEFAULT_OWNER = "default"


def hash_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def _valid_owner_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= 100 or not name.isprintable():
        raise ValidationFailed.field("owner", "must be 1 to 100 printable characters")
    return name


async def ensure_owner(store: Store, clock: Clock, name: str) -> Owner:
    name = _valid_owner_name(name)
    owner = await store.get_owner_by_name(name)
    if owner is None:
        owner = Owner(new_id("own"), name, clock.now_ms())
        await store.add_owner(owner)
    return owner


async def create_key(store: Store, clock: Clock, owner_name: str) -> tuple[str, ApiKey]:
    """A new key for the owner (created if new); returns (plaintext shown once, stored key)."""
    owner = await ensure_owner(store, clock, owner_name)
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        key_id=new_id("key"),
        owner_id=owner.owner_id,
        owner_name=owner.name,
        key_hash=hash_key(plaintext),
        prefix=plaintext[:SHOWN_PREFIX_LENGTH],
        created_ms=clock.now_ms(),
    )
    await store.add_key(key)
    return plaintext, key


async def bootstrap(store: Store, clock: Clock) -> str | None:
    """On an empty store, create the `default` owner and its first key; return that key."""
    if await store.count_owners():
        return None
    plaintext, _ = await create_key(store, clock, DEFAULT_OWNER)
    return plaintext


async def revoke_key(store: Store, clock: Clock, key_id: str) -> ApiKey:
    key = await store.revoke_key(key_id, clock.now_ms())
    if key is None:
        raise NotFound(f"No API key {echo(key_id)}.")
    return key


class KeyAuthenticator:
    """Resolves a presented bearer token to its key, with a short-lived per-worker cache."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._ttl_ms = round(ctx.settings.key_cache_ttl_s * 1000)
        self._cache: dict[str, tuple[ApiKey, int]] = {}
        self._touched: dict[str, int] = {}

    async def authenticate(self, token: str | None) -> ApiKey:
        if not token:
            raise Unauthorized("An API key is required: send 'Authorization: Bearer <key>'.")
        key_hash = hash_key(token)
        now = self._ctx.clock.now_ms()
        cached = self._cache.get(key_hash)
        key = cached[0] if cached and cached[1] > now else await self._load(key_hash, now)
        # The hash lookup already matched; the constant-time compare keeps it that way even
        # if a store implementation ever matches by prefix or case-insensitively.
        if key is None or not hmac.compare_digest(key.key_hash, key_hash):
            raise Unauthorized("The API key is unknown or has been revoked.")
        self._note_use(key, now)
        return key

    async def _load(self, key_hash: str, now: int) -> ApiKey | None:
        key = await self._ctx.store.get_key_by_hash(key_hash)
        if key is None or key.revoked_ms is not None:
            self._cache.pop(key_hash, None)
            return None
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key_hash] = (key, now + self._ttl_ms)
        return key

    def _note_use(self, key: ApiKey, now: int) -> None:
        last = self._touched.get(key.key_id, key.last_used_ms or 0)
        if now - last >= LAST_USED_INTERVAL_MS:
            self._touched[key.key_id] = now
            self._ctx.spawn(self._ctx.store.touch_key(key.key_id, now, LAST_USED_INTERVAL_MS))
