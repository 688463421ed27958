"""GET /healthz (no key)."""

from __future__ import annotations

from typing import Any

from litestar import get

import engine
from service.schemas.health import Health, HealthEnvelope


def _kernels() -> dict[str, Any]:
    return {"available": list(engine.KERNELS), "default": "native"}


@get("/healthz", tags=["health"], summary="Service health")
async def healthz() -> HealthEnvelope:
    return HealthEnvelope(Health(status="ok", version=engine.__version__, kernels=_kernels()))
