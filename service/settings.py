"""Service configuration: `AVATAR_*` environment variables, overridden by `serve` flags
(SPEC 11)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

GIB = 1024**3


class SettingsError(ValueError):
    """A configuration value cannot be used; the message names the variable and what is allowed."""


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = None
    interactive_url: str | None = None
    http_workers: int = 1
    task_workers: int = 1
    queue_limit: int = 100
    max_upload_bytes: int = GIB
    rate_limit: float = 200.0
    frame_ancestors: str = "*"
    models: tuple[str, ...] = ("metis-2.5",)
    task_timeout_s: float = 3600.0
    result_ttl_s: float = 86400.0
    url_ttl_s: float = 3600.0
    signing_key: str | None = None
    session_warmup_s: float = 0.0
    session_max_s: float = 3600.0
    webhook_allow_private: bool = False
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_default_model: str | None = None
    x264_preset: str = "veryfast"
    x264_crf: int = 18
    filter: str = "lanczos3"
    kernel: str = "native"
    # How long a worker trusts a cached API key before re-reading it, so a key revoked from the
    # CLI (another process) stops working within this many seconds in every worker.
    key_cache_ttl_s: float = 1.0
    # How often the sweeper in `serve` closes sessions that reached their maximum duration.
    sweep_interval_s: float = 1.0

    @property
    def database_path(self) -> Path:
        return self.data_dir / "avatar.db"

    @property
    def avatars_dir(self) -> Path:
        return self.data_dir / "avatars"

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with the given fields replaced; `None` values mean "not given" and are skipped."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError("must be a finite number >= 0")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise ValueError("must be greater than 0")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError("must be between 0 and 65535")
    return value


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("must be 1/0, true/false, yes/no or on/off")


def _base_url(text: str) -> str | None:
    text = text.strip().rstrip("/")
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an absolute http(s) URL such as https://avatars.example.com")
    return text


def _models(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise ValueError("must name at least one model (comma-separated)")
    return names


def _frame_ancestors(text: str) -> str:
    """Source expressions of CSP `frame-ancestors` (such as `*` or `'self' https://a.example`);
    a `;`, `,` or control character would smuggle other directives into the header."""
    value = " ".join(text.split())
    if not value or any(ch in value for ch in ";,") or not value.isprintable():
        raise ValueError(
            "must be CSP frame-ancestors sources such as * or 'self' https://a.example"
        )
    return value


def _optional(text: str) -> str | None:
    return text or None


_PARSERS: dict[str, Callable[[str], Any]] = {
    "data_dir": lambda text: Path(text),
    "host": str,
    "port": _port,
    "public_url": _base_url,
    "interactive_url": _base_url,
    "http_workers": _positive_int,
    "task_workers": _positive_int,
    "queue_limit": _positive_int,
    "max_upload_bytes": _positive_int,
    "rate_limit": _positive_float,
    "frame_ancestors": _frame_ancestors,
    "models": _models,
    "task_timeout_s": _positive_float,
    "result_ttl_s": _positive_float,
    "url_ttl_s": _positive_float,
    "signing_key": _optional,
    "session_warmup_s": _non_negative_float,
    "session_max_s": _positive_float,
    "webhook_allow_private": _flag,
    "llm_base_url": _base_url,
    "llm_api_key": _optional,
    "llm_default_model": _optional,
    "x264_preset": str,
    "x264_crf": int,
    "filter": str,
    "kernel": str,
    "key_cache_ttl_s": _non_negative_float,
    "sweep_interval_s": _positive_float,
}


def env_name(field_name: str) -> str:
    return "AVATAR_" + field_name.upper()


def parse_value(field_name: str, text: str) -> Any:
    """Parse one textual value (from the environment or a flag) for `field_name`."""
    try:
        return _PARSERS[field_name](text)
    except ValueError as exc:
        raise SettingsError(f"{env_name(field_name)}={text!r}: {exc}") from None


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from `environ` (default `os.environ`), then `overrides` (already typed)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for item in fields(Settings):
        if item.name in _PARSERS and (text := environ.get(env_name(item.name))) is not None:
            values[item.name] = parse_value(item.name, text)
    return Settings(**values).with_overrides(**overrides)
