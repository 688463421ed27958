"""Several `serve` nodes sharing PostgreSQL, an S3 bucket and a Dask cluster, each with its
own data dir and roles: a task submitted through an HTTP-only node is run by a tasks node (its
segments on the Dask workers) and downloaded through the first; a revoke answered by one node
ends a socket held by another within a second; a tasks node killed mid-task leaves its task to
another, which reuses the segments already finished; and the configurations that cannot work
are refused in one line."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import time

import av
import httpx
import pytest
import websockets

from tests.engine.conftest import make_clip
from tests.service.conftest import serve_starter

pytestmark = pytest.mark.slow

UPSCALE = "/v1/video/upscale"
FAST = {"AVATAR_X264_PRESET": "ultrafast", "AVATAR_WEBHOOK_ALLOW_PRIVATE": "1"}
END_WITHIN_S = 1.0


@pytest.fixture(scope="module")
def shared(postgres_cluster, s3_server, dask_cluster) -> dict[str, str]:
    """What the nodes of this module share: one database, one bucket prefix, one scheduler
    (upscales cut into segments of a fifth of a second)."""
    return {
        "AVATAR_DATABASE_URL": postgres_cluster.create_database(),
        **s3_server.env(f"nodes{os.getpid()}"),
        "AVATAR_DASK_SCHEDULER": dask_cluster.address,
        "AVATAR_SEGMENT_SECONDS": "0.2",
        **FAST,
    }


def closed_gop_clip(path, width: int, height: int, frames: int) -> bytes:
    """A clip with an IDR every 10 frames (a third of a second): segments of 10 frames."""
    make_clip(path, width=width, height=height, frames=frames, audio=(),
              x264_params="keyint=10:min-keyint=10:scenecut=0")  # fmt: skip
    return path.read_bytes()


@pytest.fixture(scope="module")
def nodes(shared, tmp_path_factory):
    """An HTTP-only node (its key printed: it made the first), a tasks node, and a second
    HTTP-only node."""
    with serve_starter(tmp_path_factory.mktemp("nodes")) as start:
        front = start(AVATAR_ROLES="http", **shared)
        worker = start(AVATAR_ROLES="tasks,sweeper,webhooks", **shared)
        other = start(AVATAR_ROLES="http", **shared)
        yield front, worker, other


def frames_of(video: bytes) -> list[int]:
    with av.open(io.BytesIO(video)) as container:
        return [frame.pts for frame in container.decode(video=0)]


def test_a_task_submitted_on_one_node_is_run_by_another(nodes, receiver, poll, tmp_path):
    front, _, other = nodes
    video = closed_gop_clip(tmp_path / "clip.mp4", 160, 90, frames=30)
    answer = httpx.post(
        f"{front.base}{UPSCALE}?resolution=1080p",
        headers=front.auth,
        files={"file": ("clip.mp4", video, "video/mp4")},
        data={"webhook_url": receiver.url()},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    task_id = answer.json()["data"]["task_id"]

    def done() -> dict | None:
        data = httpx.get(f"{other.base}{UPSCALE}/{task_id}", headers=front.auth).json()["data"]
        return data if data["status"] == "COMPLETED" else None

    data = poll(done, timeout=120)
    link = data["result"]["output"]["file_url"]
    assert link.startswith(other.base)  # the node asked signs the link
    through_front = link.replace(other.base, front.base)
    whole = httpx.get(through_front, timeout=30)
    assert whole.status_code == 200 and len(frames_of(whole.content)) == 30
    ranged = httpx.get(through_front, headers={"Range": "bytes=4-11"}, timeout=30)
    assert (ranged.status_code, ranged.content) == (206, whole.content[4:12])
    (delivery,) = receiver.wait_for(1)
    assert json.loads(delivery.body)["data"]["status"] == "COMPLETED"


async def _state(ws, timeout: float = 10.0) -> dict:
    async with asyncio.timeout(timeout):
        while (frame := json.loads(await ws.recv()))["type"] != "state":
            pass
    return frame


def test_a_revoke_on_one_node_ends_a_socket_held_by_another(nodes):
    front, _, other = nodes
    with httpx.Client(base_url=front.base, headers=front.auth, timeout=10) as client:
        agent = client.post("/v1/agents", json={"name": "Ada"}).json()["data"]
        route = client.post(f"/v1/agents/{agent['agent_id']}/routes", json={}).json()["data"]

        async def scenario() -> tuple[dict, float]:
            async with websockets.connect(f"ws://127.0.0.1:{other.port}/r/{route['id']}/ws") as ws:
                await _state(ws)
                started = time.monotonic()
                revoked = await asyncio.to_thread(
                    client.post, f"/v1/agent-routes/{route['id']}/revoke"
                )
                assert revoked.status_code == 200
                frame = await _state(ws)
                while frame["state"] != "ended":
                    frame = await _state(ws)
                return frame, time.monotonic() - started

        frame, took = asyncio.run(scenario())
    assert frame == {"type": "state", "state": "ended", "reason": "revoked"}
    assert took < END_WITHIN_S, took


def _segments_run(dask_cluster, task_id: str) -> dict[int, set[str]]:
    """The segment index -> the Dask keys that ever started on a worker for `task_id` (each
    run of the task submits its own keys; a recomputed lost segment keeps its key)."""

    def started(dask_scheduler) -> list[str]:
        return [t.key for t in dask_scheduler.transition_log if t.finish == "processing"]

    with dask_cluster.client() as client:
        keys = client.run_on_scheduler(started)
    runs: dict[int, set[str]] = {}
    for key in keys:
        if key.startswith(f"avatar-segments/{task_id}/"):
            index = int(key.rsplit(".mp4", 1)[0].rsplit("-", 1)[1])
            runs.setdefault(index, set()).add(key)
    return runs


def test_a_tasks_node_killed_mid_task_leaves_it_to_another(
    shared, database_url, dask_cluster, s3_server, tmp_path, receiver, poll
):
    env = {**shared, "AVATAR_DATABASE_URL": database_url, "AVATAR_SWEEP_INTERVAL_S": "0.5"}
    with serve_starter(tmp_path) as start:
        front = start(AVATAR_ROLES="http", **env)
        doomed = start(AVATAR_ROLES="tasks", **env)
        answer = httpx.post(
            f"{front.base}{UPSCALE}?resolution=2k",
            headers=front.auth,
            files={"file": ("clip.mp4", closed_gop_clip(tmp_path / "c.mp4", 640, 360, 40))},
            data={"webhook_url": receiver.url()},
            timeout=30,
        )
        task_id = answer.json()["data"]["task_id"]
        status = f"{front.base}{UPSCALE}/{task_id}"
        # A segment is done: kill the node while the others run (or, on a fast machine, the
        # join waits: the new node then reuses every segment).
        poll(
            lambda: httpx.get(status, headers=front.auth).json()["data"]["progress"] > 0,
            timeout=120,
        )
        os.killpg(doomed.process.pid, signal.SIGKILL)  # the machine is gone
        doomed.process.wait()
        folder = f"{env['AVATAR_S3_PREFIX']}/segments/{task_id}/"
        finished = [int(key[-9:-4]) for key in s3_server.keys(folder) if key.endswith(".mp4")]
        assert finished
        start(AVATAR_ROLES="tasks,sweeper,webhooks", **env)

        def done() -> dict | None:
            data = httpx.get(status, headers=front.auth).json()["data"]
            return data if data["status"] == "COMPLETED" else None

        data = poll(done, timeout=240)
        video = httpx.get(data["result"]["output"]["file_url"], timeout=30).content
        assert len(frames_of(video)) == 40
        (delivery,) = receiver.wait_for(1)
        assert json.loads(delivery.body)["data"]["status"] == "COMPLETED"
    runs = _segments_run(dask_cluster, task_id)
    assert sorted(runs) == [0, 1, 2, 3]
    assert all(len(runs[index]) == 1 for index in finished), runs  # reused, not made again


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"AVATAR_ROLES": "http"}, "AVATAR_DATABASE_URL"),
        (
            {"AVATAR_ROLES": "tasks,webhooks", "AVATAR_DATABASE_URL": "postgresql://x@h/db"},
            "AVATAR_S3_BUCKET",
        ),
        ({"AVATAR_ROLES": "http,cooking"}, "subset of http,tasks,sweeper,webhooks"),
    ],
)
def test_configurations_that_cannot_work_are_refused_in_one_line(env, says, run_cli, tmp_path):
    result = run_cli("serve", "--data-dir", str(tmp_path), env={"PATH": os.environ["PATH"], **env})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


# The `cluster` extra's packages made unimportable, as after `pip install .` alone.
WITHOUT_EXTRA = (
    "import sys\n"
    "for name in ('psycopg', 'psycopg_pool', 'boto3', 'botocore', 'dask', 'distributed'):\n"
    "    sys.modules[name] = None\n"
)


def test_the_embedded_setup_needs_no_extra_and_a_cluster_setting_says_how_to_get_it(tmp_path):
    import subprocess
    import sys

    imports = (
        "import service.app, service.runtime, service.workers.tasks, service.commands.store\n"
        "from service.domain.kinds import task_kinds; task_kinds()"
    )
    # Run outside the repository: `-c` puts the working directory first on the path, where the
    # source tree's engine/ (no compiled _native) would shadow the installed package.
    command = [sys.executable, "-c", WITHOUT_EXTRA + imports]
    loaded = subprocess.run(command, cwd=tmp_path, check=False)
    assert loaded.returncode == 0
    serve = "from service.cli import main; sys.exit(main(sys.argv[1:]))"
    for variable, value in (
        ("AVATAR_DATABASE_URL", "postgresql://127.0.0.1:1/db"),
        ("AVATAR_S3_BUCKET", "bucket"),
    ):
        result = subprocess.run(
            [sys.executable, "-c", WITHOUT_EXTRA + serve, "serve", "--data-dir", str(tmp_path)],
            env={"PATH": os.environ["PATH"], variable: value}, cwd=tmp_path,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, result.stderr
        assert len(lines) == 1 and "pip install 'avatar-service[cluster]'" in lines[0], lines
