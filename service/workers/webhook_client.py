"""The HTTP side of webhooks (httpx): resolving a URL's host, and posting to an address the
domain checked rather than to the name, so a host that resolves differently a moment later
(DNS rebinding) cannot redirect the request.

The request goes to the address, with the URL's host name as `Host` and as the TLS server
name: httpcore hands the `sni_hostname` extension to the handshake as `server_hostname`, which
Python's ssl both sends as SNI and checks the certificate against (the context has
`check_hostname` on), so the certificate is verified for the name, never the address.

Each post uses its own client, and so its own connection: a pooled connection is matched by
address alone, and could carry a request for one host over a TLS session verified for
another."""

from __future__ import annotations

import asyncio
import socket
import ssl

import httpx

import engine
from service.domain.webhooks import DeliveryFailed

_USER_AGENT = f"avatar-service/{engine.__version__} (webhooks)"


class HttpTransport:
    """`service.domain.deliveries.Transport` over HTTP/1.1. No timeouts of its own: the
    domain bounds each whole delivery."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        # httpx's default trust (certifi, or SSL_CERT_FILE / SSL_CERT_DIR when set), made
        # once: loading the CA bundle costs more than a delivery's own work.
        self._ssl_context = ssl_context or httpx.create_ssl_context()

    async def resolve(self, url: str) -> list[str]:
        parsed = _parse(url)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                parsed.raw_host.decode("ascii"), parsed.port, type=socket.SOCK_STREAM
            )
        except (socket.gaierror, UnicodeError) as exc:
            raise DeliveryFailed(f"The host {parsed.host} does not resolve ({exc}).") from None
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    async def post(
        self, url: str, addresses: list[str], headers: dict[str, str], body: bytes
    ) -> int:
        """Try the addresses in order until one connects."""
        parsed = _parse(url)
        failure = DeliveryFailed(f"Could not connect to {parsed.host}.")
        for address in addresses:
            try:
                return await self._post_to(parsed, address, headers, body)
            except httpx.TimeoutException:
                raise TimeoutError from None
            except httpx.ConnectError as exc:  # refused, unreachable, or TLS (try the next)
                failure = DeliveryFailed(f"Could not connect to {parsed.host} ({exc}).")
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise DeliveryFailed(f"The request to {parsed.host} failed ({exc}).") from None
        raise failure

    async def _post_to(
        self, url: httpx.URL, address: str, headers: dict[str, str], body: bytes
    ) -> int:
        # trust_env=False: an HTTP(S)_PROXY from the environment would resolve the name
        # again, out of reach of the address check.
        client = httpx.AsyncClient(
            verify=self._ssl_context, trust_env=False, follow_redirects=False, timeout=None
        )
        headers = headers | {"Host": url.netloc.decode("ascii"), "User-Agent": _USER_AGENT}
        async with (
            client,
            client.stream(
                "POST",
                url.copy_with(host=address),
                content=body,
                headers=headers,
                extensions={"sni_hostname": url.raw_host.decode("ascii")},
            ) as response,
        ):
            return response.status_code  # the body is never read


def _parse(url: str) -> httpx.URL:
    try:
        return httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise DeliveryFailed(f"The URL cannot be used ({exc}).") from None
