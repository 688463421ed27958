"""Streaming upload benchmark: one large multipart upload to `POST /v1/video/upscale` of a real
`avatar-service serve`, over loopback.

    python -m bench.upload [--size-mib 1024] [--rounds 3] [--chunk-kib 1024]

Starts `serve` (one HTTP worker, a temporary data dir, AVATAR_MAX_UPLOAD_BYTES above the
upload's size), measured plain and with an Idempotency-Key header (then the file's SHA-256 is
computed as it streams), and, as the same-run peer, Granian serving a bare ASGI app that writes
the body it receives to a file with os.write: the floor of server + ASGI + disk, without
Litestar, the multipart parser or the file store. Each round sends the same upload to every
candidate (interleaved, the order reversed every other round): the client writes the multipart
body to a raw socket from one reused buffer, so it never holds more than one chunk. The file
part is zeros, so `serve` answers 422 INVALID_VIDEO once the file is stored and probed (and
deletes it): the figure is the streaming, not a task.

Reported per candidate, median over the rounds: MB/s (10^6 bytes) over the time from the first
byte sent to the last byte sent ("in": what the server took in, give or take the socket
buffers) and to the answer (which also covers the probe and the file's deletion), and the HTTP
worker's RSS growth: its VmHWM after the upload minus its VmRSS before (the peak is reset just
before, through /proc/PID/clear_refs), and the peak of VmRSS sampled every 10 ms during the
upload, minus the same baseline. The worker process is found as the grandchild of `serve`
(serve -> HTTP role -> Granian worker); for the peer, Granian's child."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from bench.server import Server, free_port, memory_kib

BOUNDARY = "benchboundary7MA4YWxkTrZu0gW"
MIB = 1024 * 1024
# With this header `serve` also computes the upload's SHA-256 (to tell a repeat of the request).
# The upload is refused (INVALID_VIDEO) before the key is remembered, so every round may reuse it.
IDEMPOTENT = {"Idempotency-Key": "bench-upload"}


async def sink_app(scope, receive, send) -> None:
    """The peer: write the request body to a file in $BENCH_SINK_DIR, answer 200."""
    if scope["type"] != "http":
        return
    path = Path(os.environ["BENCH_SINK_DIR"]) / f"body-{os.getpid()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        more = True
        while more:
            message = await receive()
            view = memoryview(message.get("body", b""))
            while view:
                view = view[os.write(fd, view) :]
            more = message.get("more_body", False)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


@dataclass(frozen=True)
class Target:
    """Where an upload goes, and which process serves it."""

    name: str
    port: int
    path: str
    headers: dict[str, str]
    root_pid: int
    depth: int  # how far below `root_pid` the worker process runs

    def worker_pid(self) -> int:
        pids = [self.root_pid]
        for _ in range(self.depth):
            pids = [child for pid in pids for child in _children(pid)]
        workers = [pid for pid in pids if not _is_resource_tracker(pid)]
        if len(workers) != 1:
            raise RuntimeError(f"expected one worker process of {self.name}, found {workers}")
        return workers[0]


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _is_resource_tracker(pid: int) -> bool:
    return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()


def start_serve(work: Path, max_upload: int) -> tuple[Server, Target]:
    env = {"AVATAR_MAX_UPLOAD_BYTES": str(max_upload), "AVATAR_RATE_LIMIT": "1000"}
    server = Server(work, env)
    auth = {"Authorization": f"Bearer {server.wait_ready()}"}
    path = "/v1/video/upscale?resolution=1080p"
    target = Target("serve", server.port, path, auth, server.process.pid, 2)
    _wait_for_worker(target)
    return server, target


def start_sink(work: Path) -> tuple[subprocess.Popen, Target]:
    port = free_port()
    (work / "sink").mkdir()
    env = {**os.environ, "BENCH_SINK_DIR": str(work / "sink")}
    command = [sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1", "bench.upload:sink_app"]
    with (work / "sink.log").open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    target = Target("asgi sink (peer)", port, "/", {}, process.pid, 1)
    _wait_for_worker(target)
    return process, target


def _wait_for_worker(target: Target, timeout: float = 60.0) -> None:
    """Until the target accepts connections and its worker process exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", target.port), timeout=1).close()
            target.worker_pid()
            return
        except (OSError, RuntimeError):
            time.sleep(0.1)
    raise RuntimeError(f"{target.name} did not start in {timeout:.0f} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass(frozen=True)
class Sample:
    sent_mb_s: float
    answered_mb_s: float
    hwm_growth_mib: float
    sampled_growth_mib: float
    status: int


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kib, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak_kib = max(self.peak_kib, memory_kib(self.pid, "VmRSS"))
            time.sleep(0.01)


def upload(server: Target, size: int, chunk: bytes) -> Sample:
    pid = server.worker_pid()
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS (see proc(5))
    before_kib = memory_kib(pid, "VmRSS")
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\n'
        "Content-Type: video/mp4\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    headers = {
        "Host": f"127.0.0.1:{server.port}",
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        "Content-Length": str(len(head) + size + len(tail)),
        **server.headers,
    }
    request = f"POST {server.path} HTTP/1.1\r\n"
    request += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    sampler = RssSampler(pid)
    sampler.start()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        start = time.perf_counter()
        sock.sendall(request.encode() + head)
        view = memoryview(chunk)
        left = size
        while left:
            step = min(left, len(view))
            sock.sendall(view[:step])
            left -= step
        sock.sendall(tail)
        sent = time.perf_counter() - start
        status = _read_status(sock)
        answered = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    hwm_kib = memory_kib(pid, "VmHWM")
    return Sample(
        sent_mb_s=size / sent / 1e6,
        answered_mb_s=size / answered / 1e6,
        hwm_growth_mib=max(0, hwm_kib - before_kib) / 1024,
        sampled_growth_mib=max(0, sampler.peak_kib - before_kib) / 1024,
        status=status,
    )


def _read_status(sock: socket.socket) -> int:
    received = b""
    while b"\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return int(received.split(b" ", 2)[1]) if received.startswith(b"HTTP/1.1 ") else 0


def _print(results: dict[str, list[Sample]], size: int) -> None:
    print(f"\n{size / MIB:,.0f} MiB multipart upload over loopback, medians of "
          f"{len(next(iter(results.values())))} interleaved rounds")  # fmt: skip
    print(f"{'server':<20} {'status':>6} {'MB/s in':>8} {'MB/s answer':>12} "
          f"{'HWM growth MiB':>15} {'sampled MiB':>12}")  # fmt: skip
    for name, samples in results.items():
        med = {f: statistics.median(getattr(s, f) for s in samples) for f in Sample.__annotations__}
        statuses = ",".join(sorted({str(s.status) for s in samples}))
        print(f"{name:<20} {statuses:>6} {med['sent_mb_s']:>8.0f} {med['answered_mb_s']:>12.0f} "
              f"{med['hwm_growth_mib']:>15.1f} {med['sampled_growth_mib']:>12.1f}")  # fmt: skip
    print("bar: serve >= 300 MB/s and peak RSS growth < 64 MiB for 1 GiB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="upload size (MiB)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--chunk-kib", type=int, default=1024, help="client send size (KiB)")
    args = parser.parse_args(argv)
    size = args.size_mib * MIB
    chunk = bytes(args.chunk_kib * 1024)
    work = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    serve, sink = None, None
    try:
        serve, plain = start_serve(work, size + 16 * MIB)
        sink, peer = start_sink(work)
        keyed = replace(plain, name="serve + Idem.-Key", headers=plain.headers | IDEMPOTENT)
        candidates = [plain, keyed, peer]
        results: dict[str, list[Sample]] = {c.name: [] for c in candidates}
        for target in candidates:  # warm up each path
            upload(target, 16 * MIB, chunk)
        for round_ in range(args.rounds):
            for target in candidates if round_ % 2 == 0 else candidates[::-1]:
                sample = upload(target, size, chunk)
                results[target.name].append(sample)
                print(f"round {round_ + 1} {target.name}: {sample.sent_mb_s:.0f} MB/s, "
                      f"HWM +{sample.hwm_growth_mib:.1f} MiB, status {sample.status}",
                      flush=True)  # fmt: skip
        _print(results, size)
    finally:
        if serve is not None:
            serve.stop()
        if sink is not None:
            _stop(sink)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
