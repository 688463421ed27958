"""The `serve` and `keys` sub-commands of `avatar-service`.

Kept light to import: Litestar and Granian load only in the processes `serve` starts."""

from __future__ import annotations

import argparse
import enum
from typing import Any

from service.settings import SettingsError, env_name, flag_name, load_settings, options, parse_value


class Exit(enum.IntEnum):
    """Exit statuses of `serve` and `keys` (argparse's usage errors are 2 as well)."""

    OK = 0
    FAILED = 1  # the data dir cannot be opened, or the action failed
    USAGE = 2  # a bad flag or AVATAR_* value
    PORT_IN_USE = 3
    DATA_DIR_IN_USE = 4


def setting_argument(parser: argparse.ArgumentParser, name: str) -> None:
    """Add the flag of setting `name`, parsed and described by the setting's own option."""
    default, option = next((d, o) for n, d, o in options() if n == name)

    def parse(text: str) -> Any:
        try:
            return parse_value(name, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (got {text!r})") from None

    parser.add_argument(
        flag_name(name),
        dest=name,
        type=parse,
        metavar=name.upper(),
        help=f"{option.help} (default: {default}; env {env_name(name)})",
    )


def settings_from(args: argparse.Namespace, names: list[str]):
    """The settings: AVATAR_* variables, then the flags given. Raises SettingsError."""
    settings = load_settings(**{name: getattr(args, name, None) for name in names})
    return settings.with_overrides(data_dir=settings.data_dir.resolve())


def add_service_commands(subparsers: argparse._SubParsersAction) -> None:
    from service.commands.keys import add_keys_command
    from service.commands.serve import add_serve_command
    from service.commands.store import add_store_command

    add_serve_command(subparsers)
    add_keys_command(subparsers)
    add_store_command(subparsers)


__all__ = ["Exit", "SettingsError", "add_service_commands", "setting_argument", "settings_from"]
