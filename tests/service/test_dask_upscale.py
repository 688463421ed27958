"""One upscale split across a real Dask cluster (`dask scheduler` and two `dask worker`
processes) by a real `serve` on SQLite and the test S3 server: the result has exactly the
single pass's frames and timestamps, pictures as good; progress counts finished frames; a
cancel stops the segments within two seconds; a worker killed mid-upscale costs nothing but
time; and a scheduler without S3, or one nobody answers at, is refused in one line."""

from __future__ import annotations

import io
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import httpx
import numpy as np
import pytest

from engine import upscale
from tests.engine.conftest import make_clip
from tests.service.conftest import ON_POSTGRES, free_port, serve_starter

pytestmark = pytest.mark.slow

UPSCALE = "/v1/video/upscale"
# 2 s at 30 fps with an IDR every half second: four segments of 15 frames.
SEGMENT_SECONDS = "0.5"
CLOSED_GOP = "keyint=15:min-keyint=15:scenecut=0"
CANCEL_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dask") / "clip.mp4"
    return make_clip(path, width=160, height=90, frames=60, x264_params=CLOSED_GOP)


@pytest.fixture(scope="module")
def node(dask_cluster, s3_server, tmp_path_factory, request):
    """A node whose upscales run on the Dask cluster (every role, the test bucket; SQLite, or
    PostgreSQL in the cluster-stack run)."""
    env = {
        **s3_server.env(f"dask{secrets.token_hex(4)}"),
        "AVATAR_DASK_SCHEDULER": dask_cluster.address,
        "AVATAR_SEGMENT_SECONDS": SEGMENT_SECONDS,
        "AVATAR_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    if ON_POSTGRES:
        env["AVATAR_DATABASE_URL"] = request.getfixturevalue("postgres_cluster").create_database()
    with serve_starter(tmp_path_factory.mktemp("node")) as start:
        yield start(**env)


def _submit(node, video: bytes, resolution: str = "1080p", **data: str) -> str:
    answer = httpx.post(
        f"{node.base}{UPSCALE}?resolution={resolution}",
        headers=node.auth,
        files={"file": ("clip.mp4", video, "video/mp4")},
        data=data,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]["task_id"]


def _status(node, task_id: str) -> dict:
    return httpx.get(f"{node.base}{UPSCALE}/{task_id}", headers=node.auth).json()["data"]


def _decoded(video: bytes | Path) -> tuple[list, list[np.ndarray]]:
    source = io.BytesIO(video) if isinstance(video, bytes) else str(video)
    with av.open(source) as container:
        stream = container.streams.video[0]
        frames = [(f.pts * stream.time_base, f.to_ndarray()) for f in container.decode(stream)]
    return [t for t, _ in frames], [p for _, p in frames]


def _psnr(pictures: list[np.ndarray], reference: list[np.ndarray]) -> float:
    pairs = zip(pictures, reference, strict=True)
    return 10 * np.log10(255**2 / np.mean([np.mean((a - b.astype(float)) ** 2) for a, b in pairs]))


def _segments_finished(task_id: str, statuses: list[dict], frames: int) -> None:
    """Every progress seen is a whole number of 15-frame segments out of `frames`."""
    for seen in statuses:
        steps = seen["progress"] / 0.99 * frames / 15
        assert seen["progress"] == 1 or abs(steps - round(steps)) < 1e-3, (task_id, seen)


def test_segmented_upscale_equals_the_single_pass(node, clip, s3_server, receiver, poll, tmp_path):
    task_id = _submit(node, clip.read_bytes(), webhook_url=receiver.url())
    seen = []

    def done() -> dict | None:
        seen.append(data := _status(node, task_id))
        return data if data["status"] == "COMPLETED" else None

    data = poll(done, timeout=120)
    _segments_finished(task_id, seen, 60)
    result = httpx.get(data["result"]["output"]["file_url"], timeout=30).content
    upscale(clip, tmp_path / "single.mp4", "1080p")
    upscale(clip, tmp_path / "lossless.mp4", "1080p", crf=0)
    times, pictures = _decoded(result)
    single_times, single = _decoded(tmp_path / "single.mp4")
    _, lossless = _decoded(tmp_path / "lossless.mp4")
    assert data["result"]["output"]["frames"] == len(times) == 60
    assert times == single_times
    assert abs(_psnr(pictures, lossless) - _psnr(single, lossless)) <= 0.1
    with av.open(io.BytesIO(result)) as joined, av.open(str(clip)) as source:
        assert [bytes(p) for p in joined.demux(audio=0)] == [
            bytes(p) for p in source.demux(audio=0)
        ]
    (delivery,) = receiver.wait_for(1)
    assert json.loads(delivery.body)["data"]["status"] == "COMPLETED"
    # The segments go with the task's end (removed right after its status is saved).
    folder = f"{node.env['AVATAR_S3_PREFIX']}/segments/{task_id}/"
    poll(lambda: not s3_server.keys(folder), timeout=10)


@pytest.fixture(scope="module")
def busy_workers(dask_cluster):
    """How many Dask workers are running a task now."""
    with dask_cluster.client() as client:
        yield lambda: sum(bool(tasks) for tasks in client.processing().values())


def _slow_clip(tmp_path: Path) -> bytes:
    """Segments of 15 frames at 1920x1080 take a second or more each here."""
    path = make_clip(tmp_path / "long.mp4", width=480, height=270, frames=60,
                     x264_params=CLOSED_GOP, audio=())  # fmt: skip
    return path.read_bytes()


def test_cancel_stops_the_segments_within_two_seconds(
    node, busy_workers, s3_server, poll, tmp_path
):
    task_id = _submit(node, _slow_clip(tmp_path), resolution="4k")
    poll(lambda: busy_workers() == 2, timeout=60)
    canceled = httpx.post(f"{node.base}{UPSCALE}/{task_id}/cancel", headers=node.auth)
    assert canceled.json()["data"]["status"] == "CANCELED"
    started = time.monotonic()
    poll(lambda: busy_workers() == 0, timeout=30)
    assert time.monotonic() - started <= CANCEL_WITHIN_S
    prefix = node.env["AVATAR_S3_PREFIX"]
    poll(lambda: not s3_server.keys(f"{prefix}/segments/{task_id}/"), timeout=10)


def test_a_worker_killed_mid_upscale_costs_only_time(
    node, dask_cluster, busy_workers, receiver, poll, tmp_path
):
    task_id = _submit(node, _slow_clip(tmp_path), resolution="4k", webhook_url=receiver.url())
    poll(lambda: busy_workers() == 2, timeout=60)
    doomed = dask_cluster.workers.pop(0)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    try:

        def done() -> dict | None:
            data = _status(node, task_id)
            return data if data["status"] in ("COMPLETED", "FAILED") else None

        data = poll(done, timeout=180)
        assert data["status"] == "COMPLETED", data
        video = httpx.get(data["result"]["output"]["file_url"], timeout=60).content
        assert len(_decoded(video)[0]) == 60
        (delivery,) = receiver.wait_for(1)
        assert json.loads(delivery.body)["data"]["status"] == "COMPLETED"
    finally:
        dask_cluster.add_worker()  # the cluster is shared by the run's other tests
        dask_cluster.wait_for_workers(2)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"AVATAR_DASK_SCHEDULER": "tcp://127.0.0.1:8786"}, "set AVATAR_S3_BUCKET"),
        ({"AVATAR_DASK_SCHEDULER": "http://127.0.0.1:8786"}, "tcp://10.0.0.5:8786"),
    ],
)
def test_a_scheduler_without_s3_is_refused_in_one_line(env, says, run_cli, tmp_path):
    result = run_cli("serve", "--data-dir", str(tmp_path), env={"PATH": os.environ["PATH"], **env})
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and says in lines[0], lines


def test_an_unreachable_scheduler_is_refused_in_one_line(s3_server, run_cli, tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    env = {"PATH": os.environ["PATH"], **s3_server.env("refused"), "AVATAR_DASK_SCHEDULER": address}
    result = run_cli("serve", "--data-dir", str(tmp_path), env=env)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, lines
    assert f"cannot reach the Dask scheduler at {address}" in lines[0], lines


def test_a_scheduler_without_dask_installed_says_how_to_get_it(s3_server, tmp_path):
    # `distributed` made unimportable, as after `pip install .` without the extra; run outside
    # the repository (`-c` puts the working directory first on the path).
    serve = (
        "import sys; sys.modules['distributed'] = None\n"
        "from service.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {"PATH": os.environ["PATH"], **s3_server.env("no-dask"),
           "AVATAR_DASK_SCHEDULER": f"tcp://127.0.0.1:{free_port()}"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", serve, "serve", "--data-dir", str(tmp_path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, lines
    assert "pip install 'avatar-service[cluster]'" in lines[0], lines
