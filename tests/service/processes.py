"""What `serve`'s processes hold, read from /proc: which of them listen on its port and which
holds the server side of a connection. Tests with several HTTP workers use it to wait until every
worker listens and to find which worker took a connection (the kernel spreads connections over
the workers' SO_REUSEPORT sockets by a hash of their addresses)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp


def serve_processes(server) -> list[Path]:
    """The /proc folders of serve and its children (serve leads its own process group)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):  # not a process, or gone meanwhile
            if os.getpgid(int(proc.name)) == server.process.pid:
                found.append(proc)
    return found


def open_files(proc: Path) -> list[str]:
    """What the process's descriptors point at (`socket:[inode]` for sockets)."""
    links = []
    for fd in (proc / "fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            links.append(os.readlink(fd))
    return links


def _sockets(port: int, keep) -> set[str]:
    """The inodes (as descriptor links) of TCP sockets on local `port` whose (remote port,
    state) `keep` accepts."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, remote, state, inode = (row.split()[n] for n in (1, 2, 3, 9))
            remote_port = int(remote.rsplit(":")[1], 16)
            if int(local.rsplit(":")[1], 16) == port and keep(remote_port, state):
                inodes.add(f"socket:[{inode}]")
    return inodes


def _holding(server, inodes: set[str]) -> set[int]:
    return {int(proc.name) for proc in serve_processes(server) if inodes & set(open_files(proc))}


def listeners(server) -> set[int]:
    """The pids of serve's processes listening on its port (one per HTTP worker)."""
    return _holding(server, _sockets(server.port, lambda _, state: state == LISTEN))


def holders(server, client_ports: set[int]) -> set[int]:
    """The pids of serve's processes holding the server side of the connections from
    `client_ports` on 127.0.0.1."""
    return _holding(server, _sockets(server.port, lambda port, _: port in client_ports))
