"""What keeps two `serve` processes apart: an exclusive lock in the data dir, and a hold on the
listening port.

The port needs a hold of its own because Granian's workers bind with SO_REUSEPORT, so a second
`serve` on a busy port would otherwise bind beside the first and silently take part of its
traffic. The hold is a socket bound (never listening) with SO_REUSEPORT: our own workers can
bind beside it, while the check of any later `serve`, a plain bind, fails on it."""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

LOCK_NAME = "serve.lock"


class DataDirInUse(Exception):
    def __init__(self, data_dir: Path, pid: str) -> None:
        owner = f" (pid {pid})" if pid else ""
        super().__init__(f"the data dir {data_dir} is in use by another `serve`{owner}")


class PortInUse(Exception):
    def __init__(self, port: int) -> None:
        super().__init__(f"port {port} is already in use")


class DataDirLock:
    """An exclusive lock on `data_dir` for the life of this process. The kernel releases it when
    the process exits, however it exits."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self._fd, 32, 0).decode(errors="replace").strip()
            os.close(self._fd)
            raise DataDirInUse(data_dir, pid) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        os.close(self._fd)


class PortHold:
    """Checks that `host:port` is free and holds it for this process's workers."""

    def __init__(self, host: str, port: int) -> None:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        # SO_REUSEADDR lets the check pass over connections of an earlier run still in
        # TIME_WAIT, but not over a socket bound or listening now.
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            _bind(probe, address, port)
        self._hold = socket.socket(family, socket.SOCK_STREAM)
        self._hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            _bind(self._hold, address, port)
        except BaseException:
            self._hold.close()
            raise

    def release(self) -> None:
        self._hold.close()


def _bind(sock: socket.socket, address: tuple, port: int) -> None:
    try:
        sock.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(port) from None
        raise
