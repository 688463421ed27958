"""The README keeps its promises: its quick start runs as written against a fresh `serve` (with
only the port and the key put in, as a reader would), it is short and self-contained, and its
configuration reference (docs/configuration.md) lists exactly the service's settings."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import av
import httpx
import pytest

from service import settings as service_settings
from service.domain.webhook_signing import derive_secret, signed_headers
from tests.reader import ROOT, SHELL_BLOCK, FreshServe, as_the_reader_runs_it, fresh_serve

pytestmark = pytest.mark.slow

README = ROOT / "README.md"
MAX_LINES = 220

QUICKSTART = re.compile(r"<!-- quickstart:begin -->(.*?)<!-- quickstart:end -->", re.S)
KEYS_CREATE = re.compile(r"`(avatar-service keys create --owner \w+)`")
CONFIG_VARIABLE = re.compile(r"^\| `(AVATAR_[A-Z0-9_]+)` \|", re.M)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the `## heading` section, up to the next `## `."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"README.md has no '## {heading}' section"
    return match[1]


@pytest.fixture(scope="module", name="fresh_serve")
def fresh_serve_fixture(tmp_path_factory) -> Iterator[FreshServe]:
    with fresh_serve(tmp_path_factory.mktemp("reader")) as server:
        yield server


def quickstart_script(text: str, server: FreshServe) -> str:
    """The quick start's shell blocks with the reader's port and key put in."""
    sections = QUICKSTART.findall(text)
    assert len(sections) == 1, "README.md needs one quickstart:begin/end pair"
    blocks = SHELL_BLOCK.findall(sections[0])
    assert blocks, "the quick start holds no ```sh block"
    return as_the_reader_runs_it("\n".join(blocks), server)


def test_quickstart_runs_as_written(fresh_serve: FreshServe) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the quick start uses curl, which this machine lacks")
    script_path = fresh_serve.directory / "quickstart.sh"
    script_path.write_text(quickstart_script(readme(), fresh_serve))
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
    reference = (README.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set(CONFIG_VARIABLE.findall(reference))
    assert declared - documented == set(), "settings missing from docs/configuration.md"
    assert documented - declared == set(), "docs/configuration.md lists variables that do not exist"
    shown = set(CONFIG_VARIABLE.findall(section(readme(), "Configuration")))
    assert shown and shown <= declared, "the README's table lists variables that do not exist"


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
