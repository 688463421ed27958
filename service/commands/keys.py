"""`avatar-service keys create|list|revoke`: API keys, managed offline against the data dir
(also while `serve` runs on it)."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
from collections.abc import Awaitable, Callable

from service.commands import Exit, setting_argument, settings_from
from service.domain.context import Context
from service.settings import SettingsError
from service.store.errors import DatabaseUnavailable, FileStoreUnavailable


def add_keys_command(subparsers: argparse._SubParsersAction) -> None:
    keys = subparsers.add_parser("keys", help="manage API keys (offline, against the data dir)")
    actions = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create an API key and print it once")
    create.add_argument("--owner", required=True, help="owner name (created if new)")
    listing = actions.add_parser("list", help="list API keys (never the keys themselves)")
    revoke = actions.add_parser("revoke", help="revoke an API key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    for parser, handler in ((create, keys_create), (listing, keys_list), (revoke, keys_revoke)):
        setting_argument(parser, "data_dir")
        parser.set_defaults(handler=handler)


def _offline(args: argparse.Namespace, action: Callable[[Context], Awaitable[None]]) -> int:
    """Run `action(ctx)` against the data dir's store, without the server."""
    from service.domain.errors import ServiceError
    from service.runtime import open_context

    try:
        settings = settings_from(args, ["data_dir"])
    except SettingsError as exc:
        print(f"avatar-service: {exc}", file=sys.stderr)
        return Exit.USAGE

    async def run() -> int:
        try:
            async with open_context(settings) as ctx:
                await action(ctx)
        except (DatabaseUnavailable, FileStoreUnavailable) as exc:
            print(f"avatar-service: {exc}", file=sys.stderr)
            return Exit.FAILED
        except (OSError, sqlite3.Error) as exc:
            print(f"avatar-service: cannot open {settings.database_path}: {exc}", file=sys.stderr)
            return Exit.FAILED
        except ServiceError as exc:
            print(f"avatar-service: {exc.message}", file=sys.stderr)
            return Exit.FAILED
        return Exit.OK

    return asyncio.run(run())


def keys_create(args: argparse.Namespace) -> int:
    from service.domain.keys import create_key

    async def action(ctx: Context) -> None:
        plaintext, key = await create_key(ctx.store, ctx.clock, args.owner)
        print(f"Created API key {key.key_id} for owner {key.owner_name!r}. It is shown only once:")
        print(plaintext)

    return _offline(args, action)


def keys_list(args: argparse.Namespace) -> int:
    from service.clock import format_optional_ts, format_ts

    async def action(ctx: Context) -> None:
        rows = [("KEY_ID", "OWNER", "PREFIX", "CREATED_AT", "LAST_USED_AT", "REVOKED_AT")]
        for key in await ctx.store.list_keys():
            rows.append(
                (key.key_id, key.owner_name, key.prefix + "…", format_ts(key.created_ms),
                 format_optional_ts(key.last_used_ms) or "-",
                 format_optional_ts(key.revoked_ms) or "-")
            )  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            print("  ".join(cells).rstrip())

    return _offline(args, action)


def keys_revoke(args: argparse.Namespace) -> int:
    from service.domain.keys import revoke_key

    async def action(ctx: Context) -> None:
        key = await revoke_key(ctx.store, ctx.clock, args.key_id)
        print(f"Revoked API key {key.key_id} of owner {key.owner_name!r}.")

    return _offline(args, action)
