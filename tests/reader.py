"""What the documentation tests share: `avatar-service serve` started as a new reader starts it
(in an empty directory, so the data dir is the default ./data, with no AVATAR_* variables but
those a test names), and the documents' ```sh blocks."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
# The installed console script and its environment's python3 (which has PyAV and Pillow), as
# after `pip install .`; `python -m` from the repository root would import the uncompiled
# source tree.
BIN_DIR = Path(sys.executable).parent
AVATAR_SERVICE = str(BIN_DIR / "avatar-service")

SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
KEY_ASSIGNMENT = re.compile(r"^KEY=.*$", re.M)
DOCUMENTED_ADDRESS = "127.0.0.1:8000"
PRINTED_KEY = re.compile(r"^(ak_\S+)$", re.M)


@dataclass(frozen=True)
class FreshServe:
    base: str
    port: int
    key: str
    directory: Path
    env: dict[str, str]  # the reader's environment: commands run with it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, process: subprocess.Popen, log: Path, timeout: float = 30.0):
    """Poll `check` until it returns something truthy; fail early if `serve` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if result := check():
                return result
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"serve not ready in time:\n{log.read_text()}")


@contextlib.contextmanager
def fresh_serve(directory: Path, **env_vars: str) -> Iterator[FreshServe]:
    """`avatar-service serve` in `directory` (empty) on a free port, stopped when done."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AVATAR_")}
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
    env.update(env_vars)
    port = free_port()
    log = directory / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [AVATAR_SERVICE, "serve", "--port", str(port)],
            cwd=directory,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        key = wait_for(lambda: PRINTED_KEY.search(log.read_text()), process, log)[1]
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{base}/healthz").status_code == 200, process, log)
        yield FreshServe(base, port, key, directory, env)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise


def as_the_reader_runs_it(script: str, server: FreshServe) -> str:
    """A document's shell text with the reader's key and port put in (the documents use
    one `KEY=...` line and the default address)."""
    assert len(KEY_ASSIGNMENT.findall(script)) == 1, "the examples need one KEY=... line"
    assert DOCUMENTED_ADDRESS in script, f"the examples no longer talk to {DOCUMENTED_ADDRESS}"
    script = KEY_ASSIGNMENT.sub(f"KEY={server.key}", script)
    return script.replace(DOCUMENTED_ADDRESS, f"127.0.0.1:{server.port}")
