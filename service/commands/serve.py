"""`avatar-service serve`: the service on one machine. It takes the data dir's lock and holds
the port, makes the first API key of an empty data dir, then supervises its processes (the
HTTP server and the background workers) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import textwrap

from service.commands import Exit, setting_argument, settings_from
from service.commands.guards import DataDirInUse, DataDirLock, PortHold, PortInUse
from service.settings import ROLES, Settings, SettingsError, env_name, options
from service.store.errors import DatabaseUnavailable, FileStoreUnavailable

_FLAGS = [name for name, _, option in options() if option.flag]


def _environment_help() -> str:
    lines = ["environment (each flag also reads its variable; a flag wins):"]
    for name, default, option in options():
        shown = "unset" if default is None else default
        if isinstance(default, tuple):  # as the variable would spell it
            shown = ", ".join(str(item) for item in default) or "none"
        lines.append(f"  {env_name(name):<28} {option.help} (default: {shown})")
    return "\n".join(lines)


def add_serve_command(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the service (HTTP API, pages and background workers)",
        description="Run the service: Granian serving the API and pages, plus its workers.",
        epilog=_environment_help()
        + "\n\nexit status: 0 stopped cleanly, 1 the data dir cannot be opened, 2 a bad flag or"
        " variable\nor an unreachable database, bucket or scheduler, 3 the port is already in"
        " use, 4 another\nserve uses the data dir",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name in _FLAGS:
        setting_argument(serve, name)
    serve.set_defaults(handler=run_serve)


def _fail(message: str, status: Exit) -> int:
    print(f"avatar-service: {message}", file=sys.stderr)
    return status


def _refusal(settings: Settings) -> str | None:
    """Why this configuration cannot run as a node, if it cannot."""
    if settings.dask_scheduler is not None and settings.s3_bucket is None:
        return (
            "AVATAR_DASK_SCHEDULER splits upscales across machines, whose Dask workers read"
            " and write the files through an S3 bucket (set AVATAR_S3_BUCKET): they cannot"
            " reach this node's data dir"
        )
    if settings.roles != ROLES:
        shown = ",".join(settings.roles)
        if settings.database_url is None:
            return (
                f"--roles {shown} runs part of the service: the other roles must run on other"
                " nodes sharing one PostgreSQL database (set AVATAR_DATABASE_URL), which SQLite"
                " cannot be"
            )
        if settings.s3_bucket is None:
            return (
                f"--roles {shown} runs part of the service: the nodes must share their files"
                " through an S3 bucket (set AVATAR_S3_BUCKET)"
            )
    return None


def run_serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args, _FLAGS)
    except SettingsError as exc:
        return _fail(str(exc), Exit.USAGE)
    if (refusal := _refusal(settings)) is not None:
        return _fail(refusal, Exit.USAGE)
    try:
        lock = DataDirLock(settings.data_dir)
    except DataDirInUse as exc:
        return _fail(str(exc), Exit.DATA_DIR_IN_USE)
    except OSError as exc:
        return _fail(f"cannot open {settings.data_dir}: {exc}", Exit.FAILED)
    try:
        return _serve_locked(settings)
    finally:
        lock.release()


def _serve_locked(settings: Settings) -> int:
    try:
        hold = PortHold(settings.host, settings.port) if "http" in settings.roles else None
    except PortInUse as exc:
        return _fail(str(exc), Exit.PORT_IN_USE)
    except OSError as exc:
        return _fail(f"cannot listen on {settings.host}:{settings.port}: {exc}", Exit.FAILED)
    try:
        try:
            first_key = asyncio.run(_bootstrap(settings))
            _check_scheduler(settings)
        except (DatabaseUnavailable, FileStoreUnavailable, ConnectionError) as exc:
            return _fail(str(exc), Exit.USAGE)
        except (OSError, sqlite3.Error) as exc:
            return _fail(f"cannot open {settings.database_path}: {exc}", Exit.FAILED)
        _announce(settings, first_key)
        _export(settings)
        _supervise(settings)
        return Exit.OK
    finally:
        if hold is not None:
            hold.release()


async def _bootstrap(settings: Settings) -> str | None:
    """Make the first key of an empty store, and take back what a previous run left running
    (the data dir's lock says no worker of it is alive). A database shared with other nodes
    may hold their running work: there, what this node left lapses with its leases."""
    from service.domain.janitor import recover_after_restart
    from service.domain.keys import bootstrap
    from service.domain.kinds import task_kinds
    from service.runtime import open_context

    async with open_context(settings) as ctx:
        if settings.database_url is None:
            await recover_after_restart(ctx, task_kinds())
        try:
            return await bootstrap(ctx.store, ctx.clock)
        except Exception:
            if await ctx.store.count_owners():  # another node made the first key meanwhile
                return None
            raise


def _check_scheduler(settings: Settings) -> None:
    """SchedulerUnavailable (a ConnectionError) when Dask is configured but cannot be used."""
    if settings.dask_scheduler is not None:
        from service.cluster.dask_segments import check_scheduler

        check_scheduler(settings.dask_scheduler)


def _announce(settings: Settings, first_key: str | None) -> None:
    if first_key is not None:
        print("Created owner 'default'. Its API key is shown only once; keep it now:")
        print(first_key, flush=True)
        return
    command = f"avatar-service keys create --owner default --data-dir {settings.data_dir}"
    where = f"the data dir {settings.data_dir}"
    if settings.database_url is not None:
        from service.store.postgres import describe

        where = f"the database at {describe(settings.database_url)}"
    print(
        textwrap.dedent(f"""\
        Using {where}; its first API key was printed when it was made.
        Lost it? Make another: {command}"""),
        flush=True,
    )


def _export(settings: Settings) -> None:
    """Granian workers build the app from the environment: pass the flags on through it."""
    for name in _FLAGS:
        value = getattr(settings, name)
        os.environ[env_name(name)] = ",".join(value) if isinstance(value, tuple) else str(value)


def _supervise(settings: Settings) -> None:
    from service.workers.http import run_http
    from service.workers.supervisor import Role, Supervisor, configure_logging
    from service.workers.sweeper import run_sweeper
    from service.workers.tasks import run_task_worker
    from service.workers.webhooks import run_webhook_sender

    configure_logging()
    processes = {
        "http": [Role("avatar-http", run_http, (settings,))],
        "sweeper": [Role("avatar-sweeper", run_sweeper, (settings,))],
        "webhooks": [Role("avatar-webhooks", run_webhook_sender, (settings,))],
        "tasks": [
            Role(f"avatar-task-{n}", run_task_worker, (settings,))
            for n in range(1, settings.task_workers + 1)
        ],
    }
    Supervisor([role for name in settings.roles for role in processes[name]]).run()
