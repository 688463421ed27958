"""Service configuration. Each setting is declared once below, with its default, its parser and
a line of help; it is read from `AVATAR_<NAME>` and, for the few marked `flag`, also from a
`serve` flag that wins over the environment. `avatar-service serve --help` lists them all."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from engine import FILTERS, KERNELS, MAX_CRF, X264_PRESETS, Filter, Kernel, Preset

GIB = 1024**3
T = TypeVar("T", bound=str)


class SettingsError(ValueError):
    """A configuration value cannot be used; the message names where it came from and what is
    allowed."""


@dataclass(frozen=True, slots=True)
class Option:
    parse: Callable[[str], Any]
    help: str
    flag: bool  # also a `serve` flag (--data-dir for data_dir, ...)


def _option(parse: Callable[[str], Any], help: str, *, flag: bool = False) -> dict[str, Option]:
    return {"option": Option(parse, help, flag)}


# Parsers: text -> value, raising ValueError("must be ...") with what is allowed.


def _whole(low: int, high: int | None = None) -> Callable[[str], int]:
    allowed = f"a whole number from {low} to {high}" if high else f"a whole number >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"must be {allowed}") from None
        if value < low or (high is not None and value > high):
            raise ValueError(f"must be {allowed}")
        return value

    return parse


def _number(
    low: float, high: float = math.inf, *, above: bool = False, unit: str = "a number"
) -> Callable[[str], float]:
    """A finite number from `low` (excluded when `above`) to `high`."""
    if high < math.inf:
        allowed = f"{unit} from {low:g} to {high:g}"
    else:
        allowed = f"{unit} {'>' if above else '>='} {low:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"must be {allowed}") from None
        if not math.isfinite(value) or not low <= value <= high or (above and value == low):
            raise ValueError(f"must be {allowed}")
        return value

    return parse


def _seconds(*, zero_ok: bool) -> Callable[[str], float]:
    return _number(0, above=not zero_ok, unit="a number of seconds")


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


def _networks(text: str) -> tuple[IPv4Network | IPv6Network, ...]:
    """Addresses and CIDR blocks, comma-separated (an address is a block of one)."""
    try:
        return tuple(ip_network(item.strip()) for item in text.split(",") if item.strip())
    except ValueError:
        raise ValueError(
            "must be addresses or CIDR blocks (host bits zero), comma-separated, such as"
            " 10.0.0.0/8, ::1"
        ) from None


def _choice(names: tuple[T, ...]) -> Callable[[str], T]:
    def parse(text: str) -> T:
        if text not in names:
            raise ValueError(f"must be one of {', '.join(names)}")
        return text

    return parse


def _optional(text: str) -> str | None:
    return text or None


def _database_url(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    if urlsplit(text).scheme not in ("postgresql", "postgres"):
        raise ValueError("must be a postgresql://user:password@host:port/database URL")
    return text


def _scheduler(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise ValueError("must be a Dask scheduler address such as tcp://10.0.0.5:8786")
    return text.rstrip("/")


ROLES = ("http", "tasks", "sweeper", "webhooks")


def _roles(text: str) -> tuple[str, ...]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ROLES]
    if not names or unknown:
        raise ValueError(f"must be a comma-separated subset of {','.join(ROLES)}")
    return tuple(name for name in ROLES if name in names)  # in a fixed order, once each


def _word(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


def _voices(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise ValueError("must name at least one voice (comma-separated)")
    return names


def _host(text: str) -> str:
    if not text.strip():
        raise ValueError("must be a host name or address such as 127.0.0.1 or 0.0.0.0")
    return text.strip()


@dataclass(frozen=True, slots=True)
class Settings:
    # Where and how `serve` runs.
    data_dir: Path = field(
        default=Path("./data"),
        metadata=_option(Path, "database, uploads, results and keys live here", flag=True),
    )
    host: str = field(
        default="127.0.0.1", metadata=_option(_host, "address to listen on", flag=True)
    )
    port: int = field(
        default=8000, metadata=_option(_whole(1, 65535), "TCP port to listen on", flag=True)
    )
    http_workers: int = field(
        default=1, metadata=_option(_whole(1, 64), "HTTP worker processes", flag=True)
    )
    # Read by the task system (`serve` starts this many task worker processes).
    task_workers: int = field(
        default=1, metadata=_option(_whole(1, 64), "task worker processes", flag=True)
    )
    # Links in responses and pages.
    public_url: str | None = field(
        default=None,
        metadata=_option(_base_url, "base of file links (default: the request's scheme and host)"),
    )
    interactive_url: str | None = field(
        default=None,
        metadata=_option(_base_url, "base of page links /r/ and /i/ (default: AVATAR_PUBLIC_URL)"),
    )
    trusted_proxies: tuple[IPv4Network | IPv6Network, ...] = field(
        default=(),
        metadata=_option(
            _networks,
            "reverse proxies whose X-Forwarded-* / Forwarded headers are believed (addresses"
            " or CIDR blocks, comma-separated)",
        ),
    )
    frame_ancestors: str = field(
        default="*", metadata=_option(_frame_ancestors, "who may frame the pages (CSP)")
    )
    # API limits.
    rate_limit: float = field(
        default=200.0,
        metadata=_option(
            _number(0, above=True), "requests per second per API key (burst: twice that)"
        ),
    )
    # Read by the task system: queue, uploads, timeouts, results and their signed links.
    queue_limit: int = field(
        default=100, metadata=_option(_whole(1), "queued tasks per owner before 503 QUEUE_FULL")
    )
    max_upload_bytes: int = field(
        default=GIB, metadata=_option(_whole(1), "largest upscale upload, in bytes")
    )
    # Uploads in progress (both file uploads; the idle limit holds for JSON bodies too).
    upload_idle_s: float = field(
        default=30.0,
        metadata=_option(
            _seconds(zero_ok=False), "a request body that pauses longer ends with 408"
        ),
    )
    max_uploads_per_key: int = field(
        default=4,
        metadata=_option(_whole(1), "uploads in flight per API key, across all HTTP workers"),
    )
    min_free_bytes: int = field(
        default=2 * GIB,
        metadata=_option(
            _whole(0), "an upload is refused (507) unless the data dir keeps this much free"
        ),
    )
    task_timeout_s: float = field(
        default=3600.0,
        metadata=_option(_seconds(zero_ok=False), "a task running longer ends TIMED_OUT"),
    )
    result_ttl_s: float = field(
        default=86400.0,
        metadata=_option(
            _seconds(zero_ok=False), "results are readable this long after submission"
        ),
    )
    url_ttl_s: float = field(
        default=3600.0, metadata=_option(_seconds(zero_ok=False), "signed file links expire after")
    )
    signing_key: str | None = field(
        default=None,
        metadata=_option(
            _optional, "key of file-link signatures (default: generated in the data dir)"
        ),
    )
    webhook_allow_private: bool = field(
        default=False,
        metadata=_option(_flag, "allow http and private/loopback webhook and agent targets"),
    )
    # Read by the upscale and generated-video tasks (the CLI takes its own flags).
    x264_preset: Preset = field(
        default="veryfast",
        metadata=_option(_choice(X264_PRESETS), "x264 preset of upscales and generated videos"),
    )
    x264_crf: float = field(
        default=18.0,
        metadata=_option(
            _number(0, MAX_CRF), f"x264 CRF of upscales and generated videos, 0 to {MAX_CRF}"
        ),
    )
    filter: Filter = field(
        default="lanczos3", metadata=_option(_choice(FILTERS), "resampling filter of upscales")
    )
    kernel: Kernel = field(
        default="native", metadata=_option(_choice(KERNELS), "resampling kernel of upscales")
    )
    # Sessions and conversations.
    models: tuple[str, ...] = field(
        default=("metis-2.5",),
        metadata=_option(
            _models, "known interactive models, comma-separated; the first is default"
        ),
    )
    session_warmup_s: float = field(
        default=0.0,
        metadata=_option(
            _seconds(zero_ok=True), "a session becomes ready no sooner than this after start"
        ),
    )
    session_max_s: float = field(
        default=3600.0,
        metadata=_option(
            _seconds(zero_ok=False), "a session stops by itself this long after start"
        ),
    )
    # Conversation sockets (the limits that protect the service from anonymous visitors).
    max_sockets_per_client: int = field(
        default=8,
        metadata=_option(_whole(1), "open conversation sockets per client address"),
    )
    max_conversations_per_route: int = field(
        default=50,
        metadata=_option(_whole(1), "open conversation sockets per route"),
    )
    conversation_idle_s: float = field(
        default=300.0,
        metadata=_option(
            _seconds(zero_ok=False), "a route conversation with no visitor message this long ends"
        ),
    )
    # Read by the conversation responders.
    llm_base_url: str | None = field(
        default=None,
        metadata=_option(
            _base_url, "OpenAI-compatible API for replies (default: offline responder)"
        ),
    )
    llm_api_key: str | None = field(
        default=None, metadata=_option(_optional, "bearer key of AVATAR_LLM_BASE_URL")
    )
    llm_default_model: str | None = field(
        default=None, metadata=_option(_optional, "model asked when an agent or session names none")
    )
    # Read by the speech engines (built-in eSpeak NG and PocketSphinx when unset).
    tts_base_url: str | None = field(
        default=None,
        metadata=_option(_base_url, "OpenAI-compatible API for text to speech (/audio/speech)"),
    )
    tts_api_key: str | None = field(
        default=None, metadata=_option(_optional, "bearer key of AVATAR_TTS_BASE_URL")
    )
    tts_model: str = field(
        default="tts-1", metadata=_option(_word, "model asked of AVATAR_TTS_BASE_URL")
    )
    tts_voices: tuple[str, ...] = field(
        default=("alloy",),
        metadata=_option(
            _voices, "AVATAR_TTS_BASE_URL's voices offered as premade profiles, comma-separated"
        ),
    )
    stt_base_url: str | None = field(
        default=None,
        metadata=_option(
            _base_url, "OpenAI-compatible API for speech to text (/audio/transcriptions)"
        ),
    )
    stt_api_key: str | None = field(
        default=None, metadata=_option(_optional, "bearer key of AVATAR_STT_BASE_URL")
    )
    stt_model: str = field(
        default="whisper-1", metadata=_option(_word, "model asked of AVATAR_STT_BASE_URL")
    )
    # Read by image generation (no built-in: without a backend it answers 503 NOT_CONFIGURED).
    image_base_url: str | None = field(
        default=None,
        metadata=_option(
            _base_url, "OpenAI-compatible API for image generation (/images/generations)"
        ),
    )
    image_api_key: str | None = field(
        default=None, metadata=_option(_optional, "bearer key of AVATAR_IMAGE_BASE_URL")
    )
    image_model: str = field(
        default="gpt-image-1", metadata=_option(_word, "model asked of AVATAR_IMAGE_BASE_URL")
    )
    # Internal timings (tests shorten them).
    key_cache_ttl_s: float = field(
        default=1.0,
        metadata=_option(
            _seconds(zero_ok=True), "a revoked key stops working within this many seconds"
        ),
    )
    sweep_interval_s: float = field(
        default=1.0,
        metadata=_option(
            _seconds(zero_ok=False),
            "how often the sweeper closes what ended (sessions, lost runs and conversations)",
        ),
    )
    # Scale-out (docs/deploy.md): what several nodes share.
    database_url: str | None = field(
        default=None,
        metadata=_option(
            _database_url, "PostgreSQL shared by every node (default: SQLite in the data dir)"
        ),
    )
    roles: tuple[str, ...] = field(
        default=ROLES,
        metadata=_option(
            _roles, "what this node runs: http,tasks,sweeper,webhooks or a subset", flag=True
        ),
    )
    s3_bucket: str | None = field(
        default=None,
        metadata=_option(
            _optional, "S3 bucket of uploads, results and images (default: the data dir)"
        ),
    )
    s3_endpoint_url: str | None = field(
        default=None,
        metadata=_option(_base_url, "S3-compatible endpoint, e.g. MinIO (default: AWS S3)"),
    )
    s3_region: str | None = field(
        default=None, metadata=_option(_optional, "region of the bucket (default: boto3's)")
    )
    s3_prefix: str = field(
        default="", metadata=_option(str, "key prefix of every object in the bucket")
    )
    s3_presigned: bool = field(
        default=False,
        metadata=_option(_flag, "result file_url is an S3 presigned GET instead of /files"),
    )
    dask_scheduler: str | None = field(
        default=None,
        metadata=_option(
            _scheduler, "Dask scheduler that splits each upscale across machines (needs S3)"
        ),
    )
    segment_seconds: float = field(
        default=30.0,
        metadata=_option(
            _seconds(zero_ok=False), "length of an upscale's segments on Dask (cut at keyframes)"
        ),
    )

    def __post_init__(self) -> None:
        # engine.resample has the learned filter only in its native kernel.
        if self.filter == "detail" and self.kernel != "native":
            raise SettingsError(
                f"AVATAR_FILTER=detail needs AVATAR_KERNEL=native, not {self.kernel!r}: "
                "the learned filter exists only in the native kernel"
            )

    @property
    def database_path(self) -> Path:
        return self.data_dir / "avatar.db"

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with the given fields replaced; `None` values mean "not given" and are skipped."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def env_name(name: str) -> str:
    return "AVATAR_" + name.upper()


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option_of(item: Field) -> Option:
    return item.metadata["option"]


def options() -> Iterator[tuple[str, Any, Option]]:
    """(field name, default, option) of every setting, in declaration order."""
    for item in fields(Settings):
        yield item.name, item.default, _option_of(item)


def parse_value(name: str, text: str) -> Any:
    """Parse one textual value of setting `name`; ValueError says what is allowed."""
    return _option_of(Settings.__dataclass_fields__[name]).parse(text)


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from `environ` (default `os.environ`), then `overrides` (already typed)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, _, _ in options():
        if (text := environ.get(env_name(name))) is not None:
            try:
                values[name] = parse_value(name, text)
            except ValueError as exc:
                raise SettingsError(f"{env_name(name)}={text!r}: {exc}") from None
    return Settings(**values).with_overrides(**overrides)
