"""`avatar-service store copy`: move a data dir's store and files into PostgreSQL and S3."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys

from service.commands import Exit, setting_argument, settings_from
from service.commands.guards import DataDirInUse, DataDirLock
from service.settings import Settings, SettingsError, parse_value
from service.store.errors import DatabaseUnavailable, FileStoreUnavailable


def add_store_command(subparsers: argparse._SubParsersAction) -> None:
    store = subparsers.add_parser("store", help="move the store to PostgreSQL and S3")
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)
    copy = actions.add_parser(
        "copy",
        help="copy a data dir into an empty PostgreSQL database (and an empty S3 bucket)",
        description=(
            "Copy every table, the signing key and (with --s3-bucket) every file of a data dir"
            " into an empty PostgreSQL database and S3 bucket prefix; then run serve with"
            " AVATAR_DATABASE_URL (and AVATAR_S3_*) set. Without --s3-bucket the files stay in"
            " the data dir, for one node on PostgreSQL. The data dir must not be in use."
        ),
        epilog="exit status: 0 copied, 1 failed (nothing written to the database),"
        " 2 a bad flag, an unreachable target or a non-empty one, 4 serve holds the data dir",
    )
    setting_argument(copy, "data_dir")
    copy.add_argument("--to", required=True, metavar="URL", help="postgresql://... of the target")
    copy.add_argument("--s3-bucket", metavar="BUCKET", help="copy the files into this bucket")
    copy.add_argument("--s3-endpoint-url", metavar="URL", help="S3-compatible endpoint")
    copy.add_argument("--s3-region", metavar="REGION", help="region of the bucket")
    copy.add_argument("--s3-prefix", metavar="PREFIX", default="", help="key prefix")
    copy.set_defaults(handler=store_copy)


def _fail(message: str, status: Exit) -> int:
    print(f"avatar-service: {message}", file=sys.stderr)
    return status


def _target(args: argparse.Namespace) -> Settings:
    settings = settings_from(args, ["data_dir"])
    try:
        url = parse_value("database_url", args.to)
        endpoint = parse_value("s3_endpoint_url", args.s3_endpoint_url or "")
    except ValueError as exc:
        raise SettingsError(f"--to / --s3-endpoint-url: {exc}") from None
    return settings.with_overrides(
        database_url=url, s3_bucket=args.s3_bucket, s3_endpoint_url=endpoint,
        s3_region=args.s3_region, s3_prefix=args.s3_prefix,
    )  # fmt: skip


def store_copy(args: argparse.Namespace) -> int:
    try:
        settings = _target(args)
    except SettingsError as exc:
        return _fail(str(exc), Exit.USAGE)
    if not settings.database_path.is_file():
        return _fail(f"{settings.database_path} does not exist: nothing to copy", Exit.FAILED)
    try:
        lock = DataDirLock(settings.data_dir)
    except DataDirInUse as exc:
        return _fail(f"{exc}: stop it first", Exit.DATA_DIR_IN_USE)
    try:
        asyncio.run(_copy(settings))
    except (DatabaseUnavailable, FileStoreUnavailable) as exc:
        return _fail(str(exc), Exit.USAGE)
    except Exception as exc:
        from service.store.copy import TargetNotEmpty

        if isinstance(exc, TargetNotEmpty):
            return _fail(f"{exc}: copy only into an empty target", Exit.USAGE)
        if isinstance(exc, OSError | sqlite3.Error):
            return _fail(f"the copy failed, the database is untouched: {exc}", Exit.FAILED)
        raise
    finally:
        lock.release()
    return Exit.OK


async def _copy(settings: Settings) -> None:
    from service.runtime import open_files, signing_key
    from service.store import copy
    from service.store.postgres import open_postgres
    from service.store.sqlite import SqliteStore

    # Opening the SQLite store brings its schema to the newest version the copy expects.
    await SqliteStore(settings.database_path, 0).close()
    store = await open_postgres(settings.database_url)
    try:
        files = await open_files(settings) if settings.s3_bucket else None
        await copy.check_empty(store, files)
        if files is not None:
            await copy.copy_files(settings.data_dir, files, print)
        key = signing_key(settings)
        await copy.copy_rows(settings.database_path, store, key, store.clock.now_ms(), print)
    finally:
        await store.close()
    print("Done. Run serve with AVATAR_DATABASE_URL set (and AVATAR_S3_* for the files).")
