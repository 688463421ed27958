"""Reading a reverse proxy's headers: believed only from trusted peers, and only as far back
along the chain as its proxies are trusted."""

from __future__ import annotations

import pytest

from service.api.proxies import base_url, client_address, origin
from service.settings import SettingsError, load_settings

TRUSTED = load_settings({"AVATAR_TRUSTED_PROXIES": "10.0.0.0/8, fd00::/8"}).trusted_proxies


def scope(peer: str = "10.0.0.2", **headers: str) -> dict:
    items = [(b"host", b"svc.internal:8000")]
    items += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    return {"type": "http", "scheme": "http", "client": (peer, 5555), "headers": items}


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),  # an untrusted peer's header is ignored
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"),  # two trusted proxies
        ("10.0.0.2", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # what the visitor wrote is left
        ("10.0.0.2", "10.0.0.4, 10.0.0.3", "10.0.0.4"),  # all trusted: the leftmost
        ("10.0.0.2", "198.51.100.1:4711", "198.51.100.1"),
        ("10.0.0.2", "unknown", "10.0.0.2"),  # nothing usable: the proxy itself
        ("fd00::2", "2001:db8::7", "2001:db8::7"),
    ],
)
def test_the_client_address_walks_back_over_trusted_proxies(peer, forwarded_for, client):
    assert client_address(scope(peer, x_forwarded_for=forwarded_for), TRUSTED) == client


def test_without_trusted_proxies_no_header_is_read():
    request = scope(
        x_forwarded_for="198.51.100.1", x_forwarded_proto="https", x_forwarded_host="a.example"
    )
    assert origin(request, ()).client == "10.0.0.2"
    assert base_url(request, ()) == "http://svc.internal:8000"


@pytest.mark.parametrize(
    ("headers", "base"),
    [
        ({"x_forwarded_proto": "https", "x_forwarded_host": "a.example"}, "https://a.example"),
        ({"x_forwarded_proto": "HTTPS"}, "https://svc.internal:8000"),
        ({"x_forwarded_host": "a.example:8443"}, "http://a.example:8443"),
        ({"x_forwarded_host": "[2001:db8::7]:8443"}, "http://[2001:db8::7]:8443"),
        # A proxy that appends: the value of the one trusted proxy is the last.
        (
            {"x_forwarded_for": "6.6.6.6, 198.51.100.1", "x_forwarded_host": "evil.example, a.ex"},
            "http://a.ex",
        ),
        # Two trusted proxies that append: the outer one's value.
        (
            {"x_forwarded_for": "198.51.100.1, 10.0.0.3", "x_forwarded_proto": "https, http"},
            "https://svc.internal:8000",
        ),
        # Values a link cannot carry are ignored.
        ({"x_forwarded_proto": "javascript"}, "http://svc.internal:8000"),
        ({"x_forwarded_host": "a.example/evil"}, "http://svc.internal:8000"),
        ({"x_forwarded_host": "user@a.example"}, "http://svc.internal:8000"),
        ({"x_forwarded_host": ""}, "http://svc.internal:8000"),
        (
            {"forwarded": 'for="[2001:db8::7]:4711";proto=https;host=a.example'},
            "https://a.example",
        ),
        # Forwarded wins over the X-Forwarded-* headers.
        (
            {"forwarded": "for=198.51.100.1", "x_forwarded_proto": "https"},
            "http://svc.internal:8000",
        ),
    ],
)
def test_links_honour_a_trusted_proxy(headers, base):
    assert base_url(scope(**headers), TRUSTED) == base


def test_forwarded_names_the_client_too():
    request = scope(forwarded="for=6.6.6.6, for=198.51.100.1;proto=https, for=10.0.0.3")
    assert client_address(request, TRUSTED) == "198.51.100.1"
    assert base_url(request, TRUSTED) == "https://svc.internal:8000"


def test_a_request_without_host_names_the_address_it_came_in_on():
    request = {**scope(), "headers": [], "server": ("127.0.0.1", 8000)}
    assert base_url(request, TRUSTED) == "http://127.0.0.1:8000"


@pytest.mark.parametrize("text", ["10.0.0.1/8", "localhost", "10.0.0.0/33"])
def test_trusted_proxies_must_be_addresses_or_blocks(text):
    with pytest.raises(SettingsError, match="AVATAR_TRUSTED_PROXIES"):
        load_settings({"AVATAR_TRUSTED_PROXIES": text})
