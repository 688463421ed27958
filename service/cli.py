"""The `avatar-service` command: one parser, each sub-command registered by its area."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

import engine
from engine.cli import add_upscale_command
from service.commands import add_service_commands


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (which flag, what is wrong), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="avatar-service", description="On-prem AI avatars and a fast native video upscaler."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {engine.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_upscale_command(subparsers)
    add_service_commands(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
