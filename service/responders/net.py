"""Connections to addresses an owner chose (custom agent endpoints; webhooks follow the same
rules). The host is resolved when a connection opens; unless private targets are allowed
(AVATAR_WEBHOOK_ALLOW_PRIVATE), every address it resolves to must be public; and the socket
connects to one of the addresses just checked, so a DNS answer that changes between the check
and the connection (rebinding) cannot send it elsewhere. TLS still checks the certificate
against the host name of the URL."""

from __future__ import annotations

import socket
from collections.abc import Iterable

import anyio
import httpcore
import httpx

from service.outbound import refused_addresses

# Each conversation has at most one reply in flight, so open conversations bound the number of
# connections; a pool limit would only make busy moments fail with a pool timeout.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=5.0)


class AddressRefused(Exception):
    """The host resolves to an address that may not be called (the message says which)."""


async def resolve(host: str, port: int) -> list[str]:
    """The addresses of `host`, in the resolver's order of preference."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(host: str, port: int, *, allow_private: bool) -> list[str]:
    addresses = await resolve(host, port)
    if refused := refused_addresses(addresses, allow_private=allow_private):
        raise AddressRefused(f"{host} resolves to non-public {', '.join(refused)}")
    return addresses


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network layer, connecting only to checked addresses."""

    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._tcp = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await checked_addresses(host, port, allow_private=self._allow_private)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} took too long") from None
        except OSError as exc:  # socket.gaierror: unknown host
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        failure = httpcore.ConnectError(f"{host} has no address")
        for address in addresses:
            try:
                return await self._tcp.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(self, *args, **kwargs) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not owner targets")

    async def sleep(self, seconds: float) -> None:
        await self._tcp.sleep(seconds)


def checked_client(*, allow_private: bool, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """A client for owner-chosen URLs: checked addresses, no redirects, and nothing taken from
    the environment (a proxy would make the address check moot; .netrc would add
    credentials)."""
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    # httpx offers no public way to give its pool a network backend, so the transport's pool
    # is replaced by one with the same settings and this backend (a test holds this).
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=LIMITS.max_connections,
        max_keepalive_connections=LIMITS.max_keepalive_connections,
        keepalive_expiry=LIMITS.keepalive_expiry,
        network_backend=_CheckedBackend(allow_private=allow_private),
    )
    return httpx.AsyncClient(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )
