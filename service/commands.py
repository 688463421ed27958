"""The `serve` and `keys` sub-commands of `avatar-service`.

Kept light to import: Litestar and Granian load only when `serve` runs."""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
from pathlib import Path

from service.settings import Settings, SettingsError, env_name, load_settings, parse_value

# serve flag -> settings field (each also read from AVATAR_<FIELD>).
_SERVE_FLAGS = {
    "--host": "host",
    "--port": "port",
    "--data-dir": "data_dir",
    "--http-workers": "http_workers",
    "--task-workers": "task_workers",
}


def add_service_commands(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve", help="run the HTTP service", description="Run the service under Granian."
    )
    for flag, field in _SERVE_FLAGS.items():
        serve.add_argument(flag, dest=field, metavar=field.upper(), help=f"(env {env_name(field)})")
    serve.set_defaults(handler=run_serve)

    keys = subparsers.add_parser("keys", help="manage API keys (offline)")
    actions = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create an API key and print it once")
    create.add_argument("--owner", required=True, help="owner name (created if new)")
    listing = actions.add_parser("list", help="list API keys (never the keys themselves)")
    revoke = actions.add_parser("revoke", help="revoke an API key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    for parser, handler in ((create, keys_create), (listing, keys_list), (revoke, keys_revoke)):
        parser.add_argument("--data-dir", dest="data_dir", help="(env AVATAR_DATA_DIR)")
        parser.set_defaults(handler=handler)


def _settings(args: argparse.Namespace, fields: list[str]) -> Settings:
    overrides = {}
    for field in fields:
        if (text := getattr(args, field, None)) is not None:
            overrides[field] = parse_value(field, text)
    settings = load_settings(**overrides)
    return settings.with_overrides(data_dir=settings.data_dir.resolve())


def _offline(args: argparse.Namespace, action) -> int:
    """Run `action(store, clock)` against the data dir's store, without the server."""
    from service.clock import SystemClock
    from service.errors import ServiceError
    from service.store.sqlite import SqliteStore

    try:
        settings = _settings(args, ["data_dir"])
    except SettingsError as exc:
        print(f"avatar-service: {exc}", file=sys.stderr)
        return 2

    async def run() -> int:
        clock = SystemClock()
        try:
            store = SqliteStore(settings.database_path, clock.now_ms())
        except (OSError, sqlite3.Error) as exc:
            print(f"avatar-service: cannot open {settings.database_path}: {exc}", file=sys.stderr)
            return 1
        try:
            return await action(store, clock)
        except ServiceError as exc:
            print(f"avatar-service: {exc.message}", file=sys.stderr)
            return 1
        finally:
            await store.close()

    return asyncio.run(run())


def keys_create(args: argparse.Namespace) -> int:
    from service.domain.keys import create_key

    async def action(store, clock) -> int:
        plaintext, key = await create_key(store, clock, args.owner)
        print(f"Created API key {key.key_id} for owner {key.owner_name!r}. It is shown only once:")
        print(plaintext)
        return 0

    return _offline(args, action)


def keys_list(args: argparse.Namespace) -> int:
    from service.clock import format_optional_ts, format_ts

    async def action(store, clock) -> int:
        rows = [("KEY_ID", "OWNER", "PREFIX", "CREATED_AT", "LAST_USED_AT", "REVOKED_AT")]
        for key in await store.list_keys():
            rows.append(
                (key.key_id, key.owner_name, key.prefix + "…", format_ts(key.created_ms),
                 format_optional_ts(key.last_used_ms) or "-",
                 format_optional_ts(key.revoked_ms) or "-")
            )  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print(
                "  ".join(
                    cell.ljust(width) for cell, width in zip(row, widths, strict=True)
                ).rstrip()
            )
        return 0

    return _offline(args, action)


def keys_revoke(args: argparse.Namespace) -> int:
    from service.domain.keys import revoke_key

    async def action(store, clock) -> int:
        key = await revoke_key(store, clock, args.key_id)
        print(f"Revoked API key {key.key_id} of owner {key.owner_name!r}.")
        return 0

    return _offline(args, action)


def _export(settings: Settings) -> None:
    """Granian workers build the app from the environment: pass the flags on through it."""
    for field in _SERVE_FLAGS.values():
        os.environ[env_name(field)] = str(getattr(settings, field))


async def _bootstrap(settings: Settings) -> str | None:
    from service.clock import SystemClock
    from service.domain.keys import bootstrap
    from service.store.sqlite import SqliteStore

    clock = SystemClock()
    store = SqliteStore(settings.database_path, clock.now_ms())
    try:
        return await bootstrap(store, clock)
    finally:
        await store.close()


def run_serve(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args, list(_SERVE_FLAGS.values()))
        load_settings()  # every other AVATAR_* variable must parse before workers start
    except SettingsError as exc:
        print(f"avatar-service: {exc}", file=sys.stderr)
        return 2
    try:
        first_key = asyncio.run(_bootstrap(settings))
    except (OSError, sqlite3.Error) as exc:
        print(f"avatar-service: cannot open {settings.data_dir}: {exc}", file=sys.stderr)
        return 1
    if first_key is not None:
        print("Created owner 'default'. Its API key is shown only once; keep it now:")
        print(first_key, flush=True)
    _export(settings)
    return _run_granian(settings)


def _run_granian(settings: Settings) -> int:
    from granian import Granian
    from granian.constants import Interfaces

    from service.workers.sweeper import SweeperProcess

    sweeper = SweeperProcess(settings)
    sweeper.start()
    try:
        Granian(
            target="service.app:create_app_from_env",
            factory=True,
            address=settings.host,
            port=settings.port,
            interface=Interfaces.ASGI,
            workers=settings.http_workers,
            working_dir=Path.cwd(),
        ).serve()
    finally:
        sweeper.stop()
    return 0
