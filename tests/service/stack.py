"""Real parts of a multi-node deployment, started on loopback for tests and benchmarks:
a throwaway PostgreSQL cluster from Debian's binaries, an S3 server (moto's), and a Dask
scheduler with its workers (`dask scheduler`, `dask worker`, each a process of its own).

PostgreSQL refuses to run as root, so as root the cluster belongs to an unprivileged user
(`postgres` when the package made it, else `nobody`) and its commands run as that user."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin() -> Path | None:
    """The newest /usr/lib/postgresql/N/bin holding initdb and postgres, if any."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4])
    )
    return Path(found[-1]).parent if found else None


def _run_as() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that drops root (empty when not root), and that user."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        return prefix, user
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run as")


class PostgresCluster:
    """`initdb` in a temporary directory and `postgres` listening on 127.0.0.1 only. With
    `durable=False` (tests) it skips fsync, which PostgreSQL's own test suites also do;
    benchmarks keep the default durability."""

    def __init__(self, *, durable: bool = False) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise FileNotFoundError("no PostgreSQL binaries in /usr/lib/postgresql/*/bin")
        prefix, user = _run_as()
        self.root = Path(tempfile.mkdtemp(prefix="avatar-pg-"))
        if user is not None:
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self.port = free_port()
        self.password = secrets.token_hex(12)
        data = self.root / "data"
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        if user is not None:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "avatar", "-A",
             "scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )  # fmt: skip
        settings = ["-c", "listen_addresses=127.0.0.1", "-p", str(self.port)]
        settings += ["-c", f"unix_socket_directories={self.root}", "-c", "max_connections=300"]
        if not durable:
            settings += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        self._log = (self.root / "postgres.log").open("wb")
        self.process = subprocess.Popen(
            [*prefix, str(bindir / "postgres"), "-D", str(data), *settings],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self._wait_ready()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://avatar:{self.password}@127.0.0.1:{self.port}/{database}"

    def _wait_ready(self, timeout: float = 30.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError((self.root / "postgres.log").read_text())
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def create_database(self) -> str:
        """The URL of a new, empty place for a store: a schema of its own, which the URL puts
        first on the search path (a CREATE DATABASE costs ~0.4 s here, a schema ~0.1 ms)."""
        import psycopg

        name = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url()}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        shutil.rmtree(self.root, ignore_errors=True)


class S3Server:
    """moto's standalone S3 server, a process of its own on a loopback port, with a bucket
    made; `env` holds the variables a `serve` needs to use it."""

    def __init__(self, bucket: str = "avatar-test") -> None:
        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self.endpoint = f"http://127.0.0.1:{port}"
        self.bucket = bucket
        self.credentials = {
            "AWS_ACCESS_KEY_ID": "test-key",
            "AWS_SECRET_ACCESS_KEY": "test-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        deadline = time.monotonic() + 30
        while True:
            try:
                self.client().create_bucket(Bucket=bucket)
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def client(self):
        import boto3

        return boto3.session.Session(
            aws_access_key_id=self.credentials["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.credentials["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
        ).client("s3", endpoint_url=self.endpoint)

    def env(self, prefix: str) -> dict[str, str]:
        return {
            **self.credentials,
            "AVATAR_S3_BUCKET": self.bucket,
            "AVATAR_S3_ENDPOINT_URL": self.endpoint,
            "AVATAR_S3_PREFIX": prefix,
        }

    def keys(self, prefix: str) -> list[str]:
        """Every object and unfinished multipart upload under `prefix`."""
        client = self.client()
        objects = client.list_objects_v2(Bucket=self.bucket, Prefix=prefix).get("Contents", [])
        uploads = client.list_multipart_uploads(Bucket=self.bucket, Prefix=prefix)
        return sorted(
            [item["Key"] for item in objects]
            + [f"(upload) {item['Key']}" for item in uploads.get("Uploads", [])]
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class DaskCluster:
    """`dask scheduler` and `workers` x `dask worker` on loopback, each its own process with
    one thread (an upscale segment keeps a machine's cores busy through x264's threads).
    Workers run without a nanny, so killing one loses it for good; `env` is theirs (the S3
    credentials). They start outside the repository, which must not shadow the installed
    package on their path (its source engine/ has no compiled module)."""

    def __init__(self, workers: int = 2, env: dict[str, str] | None = None) -> None:
        self._env = {**os.environ, **(env or {})}
        self._cwd = tempfile.mkdtemp(prefix="avatar-dask-")
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = self._start(
            "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"
        )
        self.workers: list[subprocess.Popen] = []
        for _ in range(workers):
            self.add_worker()
        self.wait_for_workers(workers)

    def _start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *args], cwd=self._cwd, env=self._env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def add_worker(self) -> subprocess.Popen:
        worker = self._start(
            "worker", self.address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
            "--no-dashboard", "--death-timeout", "60",
        )  # fmt: skip
        self.workers.append(worker)
        return worker

    def client(self):
        import distributed

        return distributed.Client(self.address, timeout=30, set_as_default=False)

    def wait_for_workers(self, count: int, timeout: float = 60) -> None:
        with self.client() as client:
            client.wait_for_workers(count, timeout=timeout)

    def stop(self) -> None:
        for process in [*self.workers, self.scheduler]:
            if process.poll() is None:
                process.terminate()
        for process in [*self.workers, self.scheduler]:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self._cwd, ignore_errors=True)
