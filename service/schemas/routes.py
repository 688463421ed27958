"""Route bodies (docs/api.md, "Routes")."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.schemas.common import Label, StrictBody

MAX_VALIDITY_SECONDS = 315_360_000
ValiditySeconds = Annotated[int, msgspec.Meta(ge=1, le=MAX_VALIDITY_SECONDS)]
RouteStatus = Literal["active", "expired", "revoked"]


class RouteCreate(StrictBody):
    label: Label | None = None
    validity_seconds: ValiditySeconds | None = None


class RouteUpdate(StrictBody):
    label: Label | None


class Route(msgspec.Struct, omit_defaults=True):
    id: str
    agent_id: str
    status: RouteStatus
    label: str | None
    created_at: str
    revoked_at: str | None
    url: str
    expires_at: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, route: models.Route, now_ms: int, base_url: str) -> Route:
        return cls(
            id=route.route_id,
            agent_id=route.agent_id,
            status=route.status(now_ms),
            label=route.label,
            created_at=format_ts(route.created_ms),
            revoked_at=format_optional_ts(route.revoked_ms),
            url=f"{base_url}/r/{route.route_id}",
            expires_at=msgspec.UNSET if route.expires_ms is None else format_ts(route.expires_ms),
        )


class RouteEnvelope(msgspec.Struct):
    data: Route


class RoutePage(msgspec.Struct):
    items: list[Route]
    next_cursor: str | None


class RoutePageEnvelope(msgspec.Struct):
    data: RoutePage
