"""The Litestar application factory."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme

import engine
from service.api import auth, body_limits, declared
from service.api.agents import AgentsController
from service.api.avatar_builds import avatar_build_router
from service.api.avatars import AvatarsController, HostedAvatarsController, avatar_png
from service.api.conversations import ConversationsController
from service.api.errors import EXCEPTION_HANDLERS
from service.api.frontdoor import front_door
from service.api.generation import GenerationController
from service.api.health import healthz
from service.api.images import image_router
from service.api.live import route_socket, session_socket
from service.api.openapi import operation_id
from service.api.pages import PagesController
from service.api.responses import JsonResponse
from service.api.routes import AgentRoutesController, RoutesController
from service.api.sessions import SessionsController
from service.api.speech import speech_file, speech_router
from service.api.upscale import result_file, upscale_router
from service.api.usage import get_usage
from service.api.video import video_router
from service.api.voice import voice_router, voice_sample
from service.api.webhooks import WebhooksController
from service.clock import Clock
from service.domain.live import LiveConversations
from service.runtime import open_context
from service.settings import Settings, load_settings
from service.workers.supervisor import die_with_parent

# JSON bodies are limited to 1 MiB everywhere; upload endpoints raise their own limit.
MAX_JSON_BODY = 1024 * 1024


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="avatar-service",
        version=engine.__version__,
        path="/schema",
        render_plugins=[JsonRenderPlugin()],
        operation_id_creator=operation_id,
        components=Components(
            security_schemes={
                "BearerAuth": SecurityScheme(
                    type="http", scheme="bearer", description="An API key as a Bearer token."
                )
            },
        ),
    )


def _api_router(settings: Settings) -> Router:
    return Router(
        path="/v1",
        route_handlers=[
            AvatarsController,
            HostedAvatarsController,
            AgentsController,
            GenerationController,
            AgentRoutesController,
            RoutesController,
            SessionsController,
            ConversationsController,
            get_usage,
            WebhooksController,
            upscale_router(settings),
            voice_router(),
            speech_router(),
            video_router(),
            image_router(),
            avatar_build_router(),
        ],
        security=[{"BearerAuth": []}],
    )


class ServiceApp(Litestar):
    """The Litestar app behind the front door (see `service.api.frontdoor`)."""

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[override]
        if scope["type"] == "http":
            await front_door(self.state, scope, receive, send, super().__call__)
        else:
            await super().__call__(scope, receive, send)


def create_app(
    settings: Settings | None = None, clock: Clock | None = None, *, worker: bool = False
) -> Litestar:
    """Build the app; the store opens (and migrates) when the app starts up. `worker` marks
    the app a server process runs for its whole life (see the gc.freeze below)."""
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with open_context(settings, clock) as ctx:
            app.state["ctx"] = ctx
            app.state["live"] = live = LiveConversations(ctx)
            auth.install(app.state, ctx)
            body_limits.install(app.state, ctx)
            declared.install(app)
            if worker:
                # Everything built so far lives as long as the worker: keep it out of the
                # cyclic GC's scans, which otherwise show up as latency spikes under load.
                # (Not in tests, which build and drop many apps.)
                gc.freeze()
            try:
                yield
            finally:
                await live.stop("server_stopping")

    return ServiceApp(
        route_handlers=[
            _api_router(settings),
            healthz,
            avatar_png,
            result_file,
            voice_sample,
            speech_file,
            PagesController,
            route_socket,
            session_socket,
        ],
        before_request=declared.hold_to_declarations,
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan],
        openapi_config=_openapi(),
        request_max_body_size=MAX_JSON_BODY,
        response_class=JsonResponse,
        debug=False,
    )


def create_app_from_env() -> Litestar:
    """The factory `serve` hands to Granian: every worker reads the same AVATAR_* settings,
    and ends with the Granian process that started it."""
    die_with_parent()
    return create_app(load_settings(), worker=True)
