"""A bash session that runs a document's commands one at a time, as a reader types them, and
reports what each printed and what its curls sent and got; and a receiver on loopback standing
for the reader's own services (webhooks, agents' endpoints)."""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Every curl leaves a trace of its exchange (`--trace-ascii`), one file per call, named so that
# they sort in call order; the document's own curl options are left as they are.
_PRELUDE = """set -o pipefail
curl() { command curl --trace-ascii "$DOCS_TRACES/$(date +%s%N)" "$@"; }
"""
_REQUEST_LINE = re.compile(r"^0000: ([A-Z]+) /", re.M)  # long lines wrap
_STATUS_LINE = re.compile(r"^0000: HTTP/[\d.]+ (\d{3})", re.M)


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str
    methods: list[str]  # of every curl, in order
    statuses: list[int]  # the final status of every curl, in order

    def describe(self) -> str:
        return (
            f"exit {self.returncode}, curl {list(zip(self.methods, self.statuses, strict=False))}"
            f"\nstdout: {self.stdout[:3000]}\nstderr: {self.stderr[:2000]}"
        )


class BashSession:
    """One `bash` reading commands from a pipe; variables and functions carry on between
    commands, as in a terminal."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.traces = directory / ".curl-traces"
        self.traces.mkdir(exist_ok=True)
        self._lines: queue.Queue[str] = queue.Queue()
        self._count = 0
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=directory,
            env={**env, "DOCS_TRACES": str(self.traces)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self._send(_PRELUDE)

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")  # bash is gone

    def _send(self, text: str) -> None:
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def run(self, command: str, timeout: float = 120.0) -> Result:
        self._count += 1
        marker = f"__docs_step_{self._count}_done__"
        errors = self.directory / ".stderr"
        shutil.rmtree(self.traces)
        self.traces.mkdir()
        self._send(f"{{\n{command}\n}} 2>{errors} </dev/null\nprintf '\\n{marker} %s\\n' $?\n")
        output = []
        while True:
            line = self._lines.get(timeout=timeout)
            if not line:
                raise AssertionError(f"bash ended while running: {command}")
            if line.startswith(marker):
                returncode = int(line.split()[1])
                break
            output.append(line)
        stdout = "".join(output).removesuffix("\n")
        traces = [path.read_text(errors="replace") for path in sorted(self.traces.iterdir())]
        return Result(
            returncode,
            stdout,
            errors.read_text(errors="replace"),
            [m for trace in traces for m in _REQUEST_LINE.findall(trace)[-1:]],
            [int(s) for trace in traces for s in _STATUS_LINE.findall(trace)[-1:]],
        )

    def __enter__(self) -> BashSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Answer200(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class LocalReceiver:
    """An HTTP server on loopback that answers every POST `200` (an empty body), standing for
    the reader's receiver of webhooks."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bytes]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(handler) -> None:
                length = int(handler.headers.get("content-length", 0))
                self.requests.append((handler.path, handler.rfile.read(length)))
                handler.send_response(200)
                handler.send_header("Content-Length", "0")
                handler.end_headers()

            def log_message(handler, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
