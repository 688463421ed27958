"""Route bodies (docs/api.md, "Routes")."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.schemas.common import Label, StrictBody, Timestamp

MAX_VALIDITY_SECONDS = 315_360_000
ValiditySeconds = Annotated[int, msgspec.Meta(ge=1, le=MAX_VALIDITY_SECONDS)]
RouteStatus = Literal["active", "expired", "revoked"]


class RouteCreate(StrictBody):
    label: Label | None = None
    validity_seconds: ValiditySeconds | None = None


class RouteUpdate(StrictBody):
    label: Label | None


class Route(msgspec.Struct, omit_defaults=True):
    """Times keep created_at <= revoked_at <= updated_at, which the hosted CLI checks."""

    id: str
    agent_id: str
    status: RouteStatus
    label: str | None
    created_at: Timestamp
    updated_at: Timestamp  # the last label change or revoke; created_at until then
    revoked_at: Timestamp | None
    route_version: int  # 1 at creation, +1 per change
    path: str  # the page, relative to the interactive base
    url: str  # the page, absolute
    expires_at: Timestamp | msgspec.UnsetType = msgspec.UNSET  # only on temporary routes

    @classmethod
    def of(cls, route: models.Route, now_ms: int, base_url: str) -> Route:
        path = f"/r/{route.route_id}"
        return cls(
            id=route.route_id,
            agent_id=route.agent_id,
            status=route.status(now_ms),
            label=route.label,
            created_at=format_ts(route.created_ms),
            updated_at=format_ts(route.updated_ms),
            revoked_at=format_optional_ts(route.revoked_ms),
            route_version=route.version,
            path=path,
            url=base_url + path,
            expires_at=msgspec.UNSET if route.expires_ms is None else format_ts(route.expires_ms),
        )


class RouteEnvelope(msgspec.Struct):
    data: Route


class RoutePage(msgspec.Struct):
    items: list[Route]
    next_cursor: str | None


class RoutePageEnvelope(msgspec.Struct):
    data: RoutePage
