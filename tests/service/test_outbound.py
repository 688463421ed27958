"""The outbound-address rule (service/outbound.py): which URLs an owner may give, with and
without AVATAR_WEBHOOK_ALLOW_PRIVATE, and why each refused one is refused."""

from __future__ import annotations

import pytest

from service.outbound import UrlRefused, check_url

# (URL, the reason when private targets are not allowed, the reason when they are: None = taken)
CASES = [
    ("https://hooks.example.com/done?x=1", None, None),
    ("https://hooks.example.com:8443/a%20b", None, None),
    ("https://xn--bcher-kva.example/", None, None),
    ("https://_svc.example.com./", None, None),
    ("https://203.0.113.7/", "203.0.113.7, which is not a public", None),  # documentation range
    ("https://8.8.8.8/", None, None),
    ("https://[2606:4700::1111]/", None, None),
    ("http://hooks.example.com/", "must be an https URL", None),
    ("https://127.0.0.1/", "127.0.0.1, which is not a public", None),
    ("https://169.254.169.254/latest/meta-data/", "169.254.169.254, which is not", None),
    ("https://10.0.0.1/", "10.0.0.1, which is not", None),
    ("https://[::1]/", "::1, which is not", None),
    ("https://[::ffff:127.0.0.1]/", "::ffff:7f00:1, which is not", None),
    ("https://[fe80::1%25eth0]/", "%-encoded host", "%-encoded host"),
    ("https://[fe80::1]/", "fe80::1, which is not", None),
    ("https://localhost/", "leads only to this machine", None),
    ("https://LOCALHOST./", "leads only to this machine", None),
    ("https://app.localhost/", "leads only to this machine", None),
    ("https://ip6-localhost/", "leads only to this machine", None),
    ("https://metadata.google.internal/", "leads only to this machine", None),
    ("https://printer.local/", "leads only to this machine", None),
    ("https://intranet/", "leads only to this machine", None),
]
# Refused whatever the setting: no address in a non-standard form, no smuggled characters.
ALWAYS = [
    ("https://0177.0.0.1/", "standard form"),
    ("https://2130706433/", "standard form"),
    ("https://0x7f000001/", "standard form"),
    ("https://127.1/", "standard form"),
    ("https://127.0.0.01/", "standard form"),
    ("https://%31%32%37.0.0.1/", "%-encoded host"),
    ("https://a%2eexample.com/", "%-encoded host"),
    ("https://[::1x]/", "is not a valid URL"),
    ("https://[v1.abc]/", "IPv6 address that is not valid"),
    ("https://exa mple.com/", "spaces or control characters"),
    ("https://example.com/\r\nX-Injected: 1", "spaces or control characters"),
    ("https://example.com/\x00", "spaces or control characters"),
    ("https://example.com/\u2028", "spaces or control characters"),
    (" https://example.com/", "spaces or control characters"),
    ("https://b\u00fccher.example/", "xn-- form"),
    ("https://exa_mple-.com/", "not a valid name"),
    ("https://a..example.com/", "not a valid name"),
    ("https://user:pw@example.com/", "without credentials"),
    ("https://@example.com/", "without credentials"),
    ("https:///path", "URL without credentials"),
    ("ftp://example.com/", "URL without credentials"),
    ("https://example.com:0/", "is not a valid URL"),
    ("https://example.com:99999/", "is not a valid URL"),
    ("https://[::1/", "is not a valid URL"),
    ("https://" + "a" * 1000 + ".com/", "at most 1000 bytes"),
]


@pytest.mark.parametrize(("url", "strict", "lenient"), CASES, ids=[c[0] for c in CASES])
def test_the_rule_with_and_without_private_targets(url, strict, lenient):
    for allow_private, reason in ((False, strict), (True, lenient)):
        if reason is None:
            check_url(url, allow_private=allow_private)
        else:
            with pytest.raises(UrlRefused, match=None) as refused:
                check_url(url, allow_private=allow_private)
            assert reason in str(refused.value), str(refused.value)


@pytest.mark.parametrize(("url", "reason"), ALWAYS, ids=[repr(c[0])[:60] for c in ALWAYS])
def test_smuggled_and_ambiguous_urls_are_refused_whatever_the_setting(url, reason):
    for allow_private in (False, True):
        with pytest.raises(UrlRefused) as refused:
            check_url(url, allow_private=allow_private)
        assert reason in str(refused.value), str(refused.value)
