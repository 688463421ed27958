"""The HTTP role of `serve`: Granian serving the Litestar app from `--http-workers` processes.
Each worker builds the app from the same AVATAR_* environment (`create_app_from_env`)."""

from __future__ import annotations

from pathlib import Path

from service.settings import Settings


def run_http(settings: Settings) -> None:
    from granian import Granian
    from granian.constants import Interfaces

    Granian(
        target="service.app:create_app_from_env",
        factory=True,
        address=settings.host,
        port=settings.port,
        interface=Interfaces.ASGI,
        workers=settings.http_workers,
        # A worker that crashes is replaced by Granian itself; the supervisor restarts the
        # whole role only when Granian's main process dies.
        respawn_failed_workers=True,
        working_dir=Path.cwd(),
    ).serve()
