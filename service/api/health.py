"""GET /healthz (no key)."""

from __future__ import annotations

from litestar import Request

import engine
from service.api.context import ctx_of
from service.api.openapi import get
from service.schemas.health import Health, HealthEnvelope


@get("/healthz", tags=["health"], summary="Service health")
async def healthz(request: Request) -> HealthEnvelope:
    """Status, version, and the upscaling kernels this machine can run (with the native
    kernel's instruction set and thread count)."""
    kernels = {
        "available": list(engine.KERNELS),
        "default": ctx_of(request).settings.kernel,
        "native": engine.kernel_info(),
    }
    return HealthEnvelope(Health(status="ok", version=engine.__version__, kernels=kernels))
