"""Configuration from AVATAR_* variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.settings import SettingsError, load_settings


def test_defaults():
    settings = load_settings({})
    assert settings.data_dir == Path("./data")
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert (settings.http_workers, settings.task_workers) == (1, 1)
    assert settings.rate_limit == 200
    assert settings.models == ("metis-2.5",)
    assert settings.session_warmup_s == 0 and settings.session_max_s == 3600
    assert settings.frame_ancestors == "*"
    assert settings.public_url is None and settings.interactive_url is None


def test_environment_and_overrides():
    env = {
        "AVATAR_PORT": "9001",
        "AVATAR_HTTP_WORKERS": "3",
        "AVATAR_TASK_WORKERS": "2",
        "AVATAR_MODELS": "metis-2.5, metis-3,metis-3",
        "AVATAR_PUBLIC_URL": "https://x.example.com/",
        "AVATAR_SESSION_WARMUP_S": "120",
        "AVATAR_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    settings = load_settings(env, port=9100)
    assert settings.port == 9100
    assert settings.http_workers == 3 and settings.task_workers == 2
    assert settings.models == ("metis-2.5", "metis-3")
    assert settings.public_url == "https://x.example.com"
    assert settings.session_warmup_s == 120.0
    assert settings.webhook_allow_private is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AVATAR_PORT", "http"),
        ("AVATAR_PORT", "70000"),
        ("AVATAR_HTTP_WORKERS", "0"),
        ("AVATAR_RATE_LIMIT", "-1"),
        ("AVATAR_RATE_LIMIT", "nan"),
        ("AVATAR_RATE_LIMIT", "0"),
        ("AVATAR_X264_CRF", "51.5"),
        ("AVATAR_X264_CRF", "nan"),
        ("AVATAR_TASK_TIMEOUT_S", "inf"),
        ("AVATAR_SESSION_WARMUP_S", "-1"),
        ("AVATAR_PUBLIC_URL", "example.com"),
        ("AVATAR_MODELS", " , "),
        ("AVATAR_WEBHOOK_ALLOW_PRIVATE", "maybe"),
        ("AVATAR_SESSION_MAX_S", "0"),
    ],
)
def test_bad_values_name_the_variable(name, value):
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value})


def test_the_detail_filter_needs_the_native_kernel():
    assert load_settings({"AVATAR_FILTER": "detail"}).filter == "detail"
    with pytest.raises(SettingsError, match="AVATAR_FILTER=detail needs AVATAR_KERNEL=native"):
        load_settings({"AVATAR_FILTER": "detail", "AVATAR_KERNEL": "numba"})


def test_number_limits_are_inclusive_where_they_say_so():
    settings = load_settings(
        {"AVATAR_X264_CRF": "51", "AVATAR_SESSION_WARMUP_S": "0", "AVATAR_RATE_LIMIT": "0.5"}
    )
    assert (settings.x264_crf, settings.session_warmup_s, settings.rate_limit) == (51, 0, 0.5)
    with pytest.raises(SettingsError, match="must be a number from 0 to 51"):
        load_settings({"AVATAR_X264_CRF": "-1"})
