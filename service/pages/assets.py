"""Static files of the pages, read once and addressed with a content hash so browsers can
cache them for good (a new release changes the hash, hence the URL)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

_STATIC_DIR = Path(__file__).parent / "static"
# Litestar adds "; charset=utf-8" to text types.
_MEDIA_TYPES = {".css": "text/css", ".js": "text/javascript"}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    media_type: str
    version: str


def _load() -> dict[str, Asset]:
    assets = {}
    for path in sorted(_STATIC_DIR.iterdir()):
        if path.suffix in _MEDIA_TYPES:
            body = path.read_bytes()
            version = hashlib.sha256(body).hexdigest()[:12]
            assets[path.name] = Asset(body, _MEDIA_TYPES[path.suffix], version)
    return assets


ASSETS: dict[str, Asset] = _load()
