"""A real `avatar-service serve` for the benchmarks: started on a free loopback port with a
temporary data dir in its own process group, with helpers to call its API and read the memory
its processes use."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEY_LINE = re.compile(r"^(ak_\S+)\s*$", re.MULTILINE)


class Server:
    """`avatar-service serve` in its own process group, output kept in the data dir."""

    def __init__(self, work: Path, env: dict[str, str] | None = None, *args: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = work / "serve.log"
        self.data_dir = work / "data"
        env = {**os.environ, **(env or {})}
        command = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--data-dir", str(self.data_dir), *args]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def wait_ready(self, timeout: float = 60.0) -> str:
        """The API key `serve` prints on its first start, once /healthz answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited early:\n{self.log.read_text()}")
            key = KEY_LINE.search(self.log.read_text(errors="replace"))
            if key and _healthy(self.base):
                return key[1]
            time.sleep(0.1)
        raise RuntimeError(
            f"serve did not become ready in {timeout:.0f} s:\n{self.log.read_text()}"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@contextmanager
def running_serve(work: Path, env: dict[str, str] | None = None) -> Iterator[tuple[Server, str]]:
    """A started `serve` and its first API key; stopped when the block ends."""
    server = Server(work, env)
    try:
        yield server, server.wait_ready()
    finally:
        server.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def api_call(base: str, key: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["data"]


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def memory_kib(pid: int, field: str = "VmRSS") -> int:
    """A /proc/PID/status memory field (VmRSS, VmHWM, ...) in KiB; 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
