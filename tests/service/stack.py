"""Real parts of a multi-node deployment, started on loopback for tests and benchmarks:
a throwaway PostgreSQL cluster from Debian's binaries.

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

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = name or f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

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
