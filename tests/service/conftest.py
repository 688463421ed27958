"""Fixtures: an app built from the factory over a temporary data dir, a clock the test moves,
API keys for several owners, real `avatar-service serve` processes on loopback, and webhook
receivers on loopback."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from litestar.testing import TestClient
from PIL import Image

from service.app import create_app
from service.clock import ManualClock
from service.domain.keys import create_key
from service.settings import load_settings
from tests.service.processes import listeners
from tests.service.stack import DaskCluster, PostgresCluster, S3Server, postgres_bin


class Api:
    """A test client plus the helpers most tests need."""

    def __init__(self, client: TestClient, clock: ManualClock) -> None:
        self.client = client
        self.clock = clock
        self.ctx = client.app.state.ctx

    def key(self, owner: str = "alice") -> dict[str, str]:
        """Authorization headers with a fresh key of `owner`."""
        with self.client.portal() as portal:
            plaintext, _ = portal.call(create_key, self.ctx.store, self.ctx.clock, owner)
        return {"Authorization": f"Bearer {plaintext}"}

    def call(self, method: str, path: str, auth: dict | None, **kwargs):
        return self.client.request(method, path, headers=auth or {}, **kwargs)

    def get(self, path: str, auth: dict | None = None, **kwargs):
        return self.call("GET", path, auth, **kwargs)

    def post(self, path: str, auth: dict | None = None, **kwargs):
        return self.call("POST", path, auth, **kwargs)

    def agent(self, auth: dict, **fields) -> dict:
        response = self.post("/v1/agents", auth, json={"name": "Ada", **fields})
        assert response.status_code == 201, response.text
        return response.json()["data"]

    def route(self, auth: dict, agent_id: str, **fields) -> dict:
        response = self.post(f"/v1/agents/{agent_id}/routes", auth, json=fields)
        assert response.status_code == 201, response.text
        return response.json()["data"]

    def avatar(self, auth: dict, image: bytes | None = None, name: str | None = None) -> dict:
        data = {"name": name} if name is not None else None
        files = {"image": ("face.png", image or png_bytes(), "image/png")}
        response = self.post("/v1/avatars", auth, files=files, data=data)
        assert response.status_code == 201, response.text
        return response.json()["data"]


def png_bytes(width: int = 32, height: int = 24, mode: str = "RGB", fmt: str = "PNG") -> bytes:
    image = Image.new(mode, (width, height))
    for x in range(width):
        image.putpixel((x, x % height), (255, 128, 0) if mode == "RGB" else (255, 128, 0, 200))
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


@cache
def mp4_bytes(width: int = 160, height: int = 90, frames: int = 10, rate: int = 30) -> bytes:
    """A small H.264 MP4 (yuv420p, no audio) of a square moving over a gradient."""
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        y, x = np.mgrid[0:height, 0:width]
        for index in range(frames):
            image = np.empty((height, width, 3), np.uint8)
            image[..., 0] = (x * 255 // max(width - 1, 1) + index * 8) % 256
            image[..., 1] = y * 255 // max(height - 1, 1)
            image[..., 2] = 128
            side = max(min(width, height) // 4, 2)
            left = (index * 3) % max(width - side, 1)
            image[height // 3 : height // 3 + side, left : left + side] = (250, 250, 40)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()


@pytest.fixture(name="mp4_bytes")
def mp4_bytes_fixture() -> Callable[..., bytes]:
    return mp4_bytes


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll for background work (in real time; the test clock does not move)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., None]:
    return wait_until


@pytest.fixture
def upscale_facts() -> dict:
    """What the inspection of a 640x360 upload finds: the `input` of a hand-made upscale task
    (for tests that make tasks through the domain, without an upload)."""
    return {
        "width": 640, "height": 360, "duration": 2.0, "frame_rate": 30.0,
        "frame_rate_fraction": "30/1", "frames": 60, "has_audio": False, "size_bytes": 1000,
        "output_width": 1920, "output_height": 1080,
    }  # fmt: skip


@pytest.fixture(name="png_bytes")
def png_bytes_fixture() -> Callable[..., bytes]:
    return png_bytes


# A webhook receiver on loopback


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


class Receiver:
    """An HTTP(S) server in a thread that records each request and answers `status` (a 3xx
    with a Location); the first `hang_first` requests are answered only once released."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Received] = []
        self.status = 200
        self.hang_first = 0
        self.server_names: list[str | None] = []  # the TLS SNI of each handshake
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda sock, name, context: self.server_names.append(name)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, host: str = "127.0.0.1", scheme: str = "http", path: str = "/hook") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            assert time.monotonic() < deadline, f"{len(self.requests)} of {count} arrived"
            time.sleep(0.01)
        return list(self.requests)

    def take(self, request: Received) -> bool:
        """Record `request`; whether to hold its answer."""
        with self._lock:
            self.requests.append(request)
            return len(self.requests) <= self.hang_first

    def hold(self) -> None:
        self._released.wait(60)

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {name.lower(): value for name, value in self.headers.items()}
            if receiver.take(Received(self.path, headers, body)):
                receiver.hold()
            try:
                self.send_response(receiver.status)
                if 300 <= receiver.status < 400:
                    self.send_header("Location", receiver.url(path="/moved"))
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:  # the sender gave up on a held answer
                pass

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def make_receiver() -> Iterator[Callable[..., Receiver]]:
    """Start receivers (HTTPS when given a server-side TLS context); all close at the end."""
    started: list[Receiver] = []

    def start(tls: ssl.SSLContext | None = None) -> Receiver:
        started.append(Receiver(tls))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def receiver(make_receiver) -> Receiver:
    return make_receiver()


@pytest.fixture
def make_api(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Api]]:
    """Build an app with settings overrides (e.g. `session_warmup_s=5`); on the cluster stack
    (see `ON_POSTGRES`) each app gets a database and a bucket prefix of its own."""
    clients: list[TestClient] = []

    def build(**overrides) -> Api:
        if ON_POSTGRES:
            overrides.setdefault("database_url", request.getfixturevalue("database_url"))
        if ON_S3:
            s3 = load_settings(request.getfixturevalue("s3_env"))
            overrides.setdefault("s3_bucket", s3.s3_bucket)
            overrides.setdefault("s3_endpoint_url", s3.s3_endpoint_url)
            overrides.setdefault("s3_prefix", s3.s3_prefix)
        settings = load_settings({}, data_dir=tmp_path / f"data{len(clients)}", **overrides)
        clock = ManualClock()
        client = TestClient(create_app(settings, clock))
        client.__enter__()
        clients.append(client)
        return Api(client, clock)

    yield build
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def api(make_api) -> Api:
    return make_api()


@pytest.fixture
def alice(api: Api) -> dict[str, str]:
    return api.key("alice")


@pytest.fixture
def bob(api: Api) -> dict[str, str]:
    return api.key("bob")


# The installed console script (the README's command); `python -m` from the repository root
# would import the source tree, which has no compiled engine._native.
AVATAR_SERVICE = str(Path(sys.executable).with_name("avatar-service"))


def poll_until(check: Callable, timeout: float = 20.0):
    """Call `check` until it returns something truthy (connection errors count as not yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("not reached in time")


@pytest.fixture
def poll() -> Callable:
    return poll_until


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess]:
    """Run `avatar-service ARGS...` to completion (env: the whole environment to use)."""

    def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AVATAR_SERVICE, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )

    return run


@dataclass(frozen=True)
class LiveServer:
    base: str
    port: int
    key: str | None  # None when the data dir already had its first key
    banner: str  # what serve printed before it started serving
    data_dir: str
    env: dict
    process: subprocess.Popen
    log: deque[str] = field(default_factory=lambda: deque(maxlen=500))  # its latest lines

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(name="free_port")
def free_port_fixture() -> Callable[[], int]:
    return free_port


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing of it may linger
            os.killpg(process.pid, signal.SIGKILL)


def _drain(stream, lines: deque[str]) -> None:
    with stream:
        lines.extend(stream)


@contextlib.contextmanager
def serve_starter(base: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start `avatar-service serve` on a loopback port (a free one unless given) with a data dir
    (a new one under `base` unless given) and extra AVATAR_* variables; every server started
    is stopped with SIGTERM (and must exit) when the block ends."""
    processes: list[subprocess.Popen] = []

    def start(data_dir: str | None = None, port: int | None = None, **env_vars: str) -> LiveServer:
        port = port or free_port()
        env = {**os.environ, **env_vars}
        data_dir = data_dir or str(base / f"data{len(processes)}")
        command = [AVATAR_SERVICE, "serve", "--port", str(port), "--data-dir", data_dir]
        # Its own process group, so a test can kill serve and all its children at once.
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            # Outside the repository: its engine/ (no compiled _native) would shadow the installed
            # package for the processes serve spawns with the working directory on their path.
            cwd=base,
            start_new_session=True,
        )
        processes.append(process)
        banner = process.stdout.readline()
        assert "default" in banner or "Using the " in banner, banner + process.stdout.read()
        banner += process.stdout.readline()
        key = banner.splitlines()[1].strip() if banner.startswith("Created") else None
        server = LiveServer(f"http://127.0.0.1:{port}", port, key, banner, data_dir, env, process)
        # Keep reading what serve prints, so a full pipe never blocks it.
        threading.Thread(target=_drain, args=(process.stdout, server.log), daemon=True).start()
        if "http" in env.get("AVATAR_ROLES", "http"):  # a node without it serves no HTTP
            poll_until(lambda: httpx.get(f"{server.base}/healthz", timeout=2).status_code == 200)
            # One worker answers before the others listen: tests that spread connections over
            # the workers need them all.
            workers = int(env.get("AVATAR_HTTP_WORKERS", "1"))
            poll_until(lambda: len(listeners(server)) == workers)
        return server

    try:
        yield start
    finally:
        for process in processes:
            _stop(process)


@pytest.fixture
def start_serve(tmp_path) -> Iterator[Callable[..., LiveServer]]:
    """`serve_starter` for one test."""
    with serve_starter(tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def start_serve_module(tmp_path_factory) -> Iterator[Callable[..., LiveServer]]:
    """`serve_starter` for a whole test module (servers shared by its tests)."""
    with serve_starter(tmp_path_factory.mktemp("serve")) as start:
        yield start


# The cluster stack. AVATAR_TEST_STACK=postgres,s3 (what .ci/run sets for its second, smaller
# run) moves every app that `make_api` builds onto PostgreSQL and an S3 bucket (either alone
# when named alone); without it, only the tests that ask for `database_url` or `s3_env` (the
# store contract tests, the multi-node tests) use them, and the PostgreSQL ones skip where its
# binaries are missing (`apt-get install postgresql`).
_STACK = set(os.environ.get("AVATAR_TEST_STACK", "").split(","))
ON_POSTGRES, ON_S3 = "postgres" in _STACK, "s3" in _STACK


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster for the whole run; tests take a database each."""
    if postgres_bin() is None:
        if ON_POSTGRES:
            raise RuntimeError("AVATAR_TEST_STACK=postgres but no PostgreSQL binaries")
        pytest.skip("no PostgreSQL binaries in /usr/lib/postgresql (apt-get install postgresql)")
    cluster = PostgresCluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def database_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database."""
    return postgres_cluster.create_database()


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path):
    """`await open_store()` opens another store on one database of the backend under test:
    several open at once stand for several processes (or nodes) sharing it."""
    if request.param == "sqlite":
        from service.store.sqlite import SqliteStore

        path = tmp_path / "store.db"

        async def sqlite_store():
            return SqliteStore(path, 0)

        return sqlite_store
    from service.store.postgres import open_postgres

    url = request.getfixturevalue("database_url")

    async def postgres_store():
        return await open_postgres(url, 0)

    return postgres_store


async def eventually(check: Callable, timeout: float = 1.0):
    """Await `check()` until it returns something truthy: what another store changed reaches
    a PostgreSQL store by notification, a few milliseconds after the commit."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not (result := await check()):
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.005)
    return result


async def another_store(settings):
    """A second store on the database of `settings` (another process, or node, using it)."""
    if settings.database_url is not None:
        from service.store.postgres import open_postgres

        return await open_postgres(settings.database_url)
    from service.store.sqlite import SqliteStore

    return SqliteStore(settings.database_path, 0)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One S3 server (moto's, over HTTP on loopback) for the whole run; tests take a prefix."""
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dask_cluster(s3_server: S3Server) -> Iterator[DaskCluster]:
    """A Dask scheduler and two workers (separate processes) for the whole run, the workers
    holding the test bucket's credentials."""
    pytest.importorskip("distributed")
    cluster = DaskCluster(workers=2, env=s3_server.credentials)
    yield cluster
    cluster.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """AVATAR_S3_* and AWS_* variables of a prefix of its own in the test bucket (set in this
    process too, for the stores the test opens itself)."""
    import secrets

    env = s3_server.env(f"t{secrets.token_hex(4)}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env
