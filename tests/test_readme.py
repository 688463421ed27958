"""The README keeps its promises: its quick start runs as written against a fresh `serve` (with
only the port and the key put in, as a reader would), it is short and self-contained, and its
configuration table lists exactly the service's settings."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import av
import httpx
import pytest

from service import settings as service_settings
from service.domain.webhook_signing import derive_secret, signed_headers

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_LINES = 220
# The installed console script and its environment's python3 (which has PyAV), as after
# `pip install .`; `python -m` from the repository root would import the uncompiled source tree.
BIN_DIR = Path(sys.executable).parent
AVATAR_SERVICE = str(BIN_DIR / "avatar-service")

QUICKSTART = re.compile(r"<!-- quickstart:begin -->(.*?)<!-- quickstart:end -->", re.S)
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
KEY_ASSIGNMENT = re.compile(r"^KEY=.*$", re.M)
README_PORT = "127.0.0.1:8000"
PRINTED_KEY = re.compile(r"^(ak_\S+)$", re.M)
KEYS_CREATE = re.compile(r"`(avatar-service keys create --owner \w+)`")
CONFIG_VARIABLE = re.compile(r"^\| `(AVATAR_[A-Z0-9_]+)` \|", re.M)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the `## heading` section, up to the next `## `."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"README.md has no '## {heading}' section"
    return match[1]


@dataclass(frozen=True)
class FreshServe:
    base: str
    port: int
    key: str
    directory: Path
    env: dict[str, str]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(check, process: subprocess.Popen, log: Path, timeout: float = 30.0):
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


@pytest.fixture(scope="module")
def fresh_serve(tmp_path_factory) -> Iterator[FreshServe]:
    """`avatar-service serve` as a new user starts it: in an empty directory (so the data dir is
    the default ./data), with no AVATAR_* variables; only the port is a free one."""
    directory = tmp_path_factory.mktemp("reader")
    env = {name: value for name, value in os.environ.items() if not name.startswith("AVATAR_")}
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
    port = _free_port()
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
        key = _wait_for(lambda: PRINTED_KEY.search(log.read_text()), process, log)[1]
        base = f"http://127.0.0.1:{port}"
        _wait_for(lambda: httpx.get(f"{base}/healthz").status_code == 200, process, log)
        yield FreshServe(base, port, key, directory, env)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise


def quickstart_script(text: str, port: int, key: str) -> str:
    """The quick start's shell blocks with the reader's port and key put in."""
    sections = QUICKSTART.findall(text)
    assert len(sections) == 1, "README.md needs one quickstart:begin/end pair"
    blocks = SHELL_BLOCK.findall(sections[0])
    assert blocks, "the quick start holds no ```sh block"
    script = "\n".join(blocks)
    assert len(KEY_ASSIGNMENT.findall(script)) == 1, "the quick start needs one KEY=... line"
    assert README_PORT in script, f"the quick start no longer talks to {README_PORT}"
    script = KEY_ASSIGNMENT.sub(f"KEY={key}", script)
    return script.replace(README_PORT, f"127.0.0.1:{port}")


def test_quickstart_runs_as_written(fresh_serve: FreshServe) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the quick start uses curl, which this machine lacks")
    script_path = fresh_serve.directory / "quickstart.sh"
    script_path.write_text(quickstart_script(readme(), fresh_serve.port, fresh_serve.key))
    result = subprocess.run(
        ["bash", "-euo", "pipefail", str(script_path)],
        cwd=fresh_serve.directory,
        env=fresh_serve.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

    auth = {"Authorization": f"Bearer {fresh_serve.key}"}
    with httpx.Client(base_url=fresh_serve.base, headers=auth, timeout=10) as client:
        (agent,) = client.get("/v1/agents").json()["data"]["items"]
        (route,) = client.get("/v1/agent-routes").json()["data"]["items"]
    assert route["agent_id"] == agent["agent_id"] and route["status"] == "active"
    assert route["url"] in result.stdout
    page = httpx.get(route["url"], timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")

    with av.open(str(fresh_serve.directory / "in.mp4")) as source:
        source_video = source.streams.video[0]
        source_size = (source_video.width, source_video.height)
        source_frames = sum(1 for _ in source.decode(source_video))
    with av.open(str(fresh_serve.directory / "out.mp4")) as output:
        assert output.format.name.startswith("mov,mp4")
        video = output.streams.video[0]
        assert video.codec_context.name == "h264"
        assert video.width > source_size[0] and video.height > source_size[1]
        assert sum(1 for _ in output.decode(video)) == source_frames


def test_keys_create_as_the_readme_says_gives_a_working_key(fresh_serve: FreshServe) -> None:
    (command,) = set(KEYS_CREATE.findall(section(readme(), "Quick start")))
    # "in the same directory as serve": the default data dir is found from there.
    result = subprocess.run(
        command.split(),
        cwd=fresh_serve.directory,
        env=fresh_serve.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip().splitlines()[-1]
    response = httpx.get(
        f"{fresh_serve.base}/v1/agents", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert response.status_code == 200, response.text


def test_readme_is_short_and_self_contained() -> None:
    text = readme()
    assert len(text.splitlines()) <= MAX_LINES
    assert "../" not in text, "the README names nothing outside the repository"
    assert not re.search(r"\bSPEC\b", text), "the README describes the product in its own words"
    for target in re.findall(r"\]\(([^)#:]+)\)", text):  # relative links must resolve
        assert (README.parent / target).exists(), f"README.md links to missing {target}"


def test_configuration_table_lists_every_setting() -> None:
    source = Path(service_settings.__file__).read_text(encoding="utf-8")
    fields = dataclasses.fields(service_settings.Settings)
    declared = {service_settings.env_name(item.name) for item in fields}
    declared |= set(re.findall(r"\bAVATAR_[A-Z0-9_]+", source))
    documented = set(CONFIG_VARIABLE.findall(section(readme(), "Configuration")))
    assert declared - documented == set(), "settings missing from the README's table"
    assert documented - declared == set(), "the README's table lists variables that do not exist"


def test_the_webhook_check_accepts_a_signed_delivery_and_nothing_else() -> None:
    webhooks = readme().split("### Webhooks\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", webhooks, re.S)[1]
    namespace: dict = {}
    exec(code, namespace)
    verified = namespace["verified"]
    secret = derive_secret(b"k" * 32, "own_x", None)
    body = b'{"data": {"task_id": "tsk_x", "status": "COMPLETED"}}'
    headers = signed_headers(secret, "tsk_x", int(time.time()), body)
    assert verified(secret, headers, body)
    assert not verified(secret, headers, body + b" ")
    assert not verified(derive_secret(b"k" * 32, "own_y", None), headers, body)
    stale = signed_headers(secret, "tsk_x", int(time.time()) - 3600, body)
    assert not verified(secret, stale, body)
