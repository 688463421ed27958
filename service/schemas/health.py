"""GET /healthz."""

from __future__ import annotations

from typing import Any

import msgspec


class Health(msgspec.Struct):
    status: str
    version: str
    kernels: dict[str, Any]


class HealthEnvelope(msgspec.Struct):
    data: Health
