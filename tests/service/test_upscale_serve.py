"""The video upscale API against real `avatar-service serve` processes: the whole flow through
a task worker, an upload refused at its limit while it streams, a client that goes away
mid-upload, cancel of a running task, and the task timeout."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import av
import httpx
import pytest

UPSCALE = "/v1/video/upscale"
FAST = {"AVATAR_X264_PRESET": "ultrafast"}
# A run that takes many seconds on the pure-numpy kernel (640x360 -> 2560x1440, 60 frames).
SLOW = {"AVATAR_X264_PRESET": "ultrafast", "AVATAR_KERNEL": "numpy"}


def submit(server, video: bytes, resolution: str = "1080p") -> dict:
    response = httpx.post(
        f"{server.base}{UPSCALE}?resolution={resolution}",
        headers=server.auth,
        files={"file": ("clip.mp4", video, "video/mp4")},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]


def status(server, task_id: str) -> dict:
    response = httpx.get(f"{server.base}{UPSCALE}/{task_id}", headers=server.auth, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def files_in(folder: Path) -> list[str]:
    """Every file under `folder` (partial dot files included); [] when it does not exist."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_the_whole_flow_through_a_worker(start_serve, poll, mp4_bytes):
    server = start_serve(**FAST)
    task = submit(server, mp4_bytes())
    assert task["status_url"] == f"{server.base}{UPSCALE}/{task['task_id']}"
    view = poll(lambda: (v := status(server, task["task_id"]))["status"] == "COMPLETED" and v)
    assert (view["stage"], view["progress"]) == ("done", 1.0)
    assert view["started_at"] and view["completed_at"] == view["finished_at"]
    assert "error" not in view and "queue_position" not in view
    assert view["billing"] == {"billable_seconds": 5.0}
    output = view["result"]["output"]
    assert (output["width"], output["height"], output["frames"]) == (640, 360, 10)

    download = httpx.get(output["file_url"], timeout=30)
    assert download.status_code == 200
    assert download.headers["content-type"] == "video/mp4"
    assert len(download.content) == output["size_bytes"]
    with av.open(io.BytesIO(download.content)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (640, 360)
        assert sum(1 for _ in container.decode(stream)) == 10
    ranged = httpx.get(output["file_url"], headers={"Range": "bytes=-10"}, timeout=10)
    assert ranged.status_code == 206 and ranged.content == download.content[-10:]
    assert files_in(Path(server.data_dir) / "uploads") == []


def _raw_upload(port: int, key: str, declared: int, body_head: bytes) -> socket.socket:
    """A socket that sent an upload's headers (Content-Length `declared`) and `body_head`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST {UPSCALE}?resolution=2k HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {declared}\r\n"
        "Content-Type: multipart/form-data; boundary=bnd\r\n\r\n"
    ).encode()
    sock.sendall(head + body_head)
    return sock


def _answer(sock: socket.socket) -> str:
    """The response read from `sock`: up to the end of its JSON body, or until it closes."""
    received = b""
    while not received.endswith(b"}}") and (chunk := sock.recv(65536)):
        received += chunk
    return received.decode("latin-1")


FILE_PART = b'--bnd\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\n'


def test_an_upload_over_the_limit_is_refused_while_it_streams(start_serve, poll):
    server = start_serve(AVATAR_MAX_UPLOAD_BYTES="100000")
    # The body would be 600 kB (within the route's body limit, which has room for the
    # framing); 150 kB of it are sent, and the answer comes without the rest.
    sock = _raw_upload(server.port, server.key, 600_000, FILE_PART + b"\0" * 150_000)
    with sock:
        answer = _answer(sock)
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "PAYLOAD_TOO_LARGE" in answer
    uploads = Path(server.data_dir) / "uploads"
    poll(lambda: files_in(uploads) == [], timeout=10)
    # A Content-Length past the route's body limit is refused before any of the body is read.
    with _raw_upload(server.port, server.key, 10_000_000, b"") as sock:
        answer = _answer(sock)
    assert answer.startswith("HTTP/1.1 413") and "PAYLOAD_TOO_LARGE" in answer, answer


def test_a_client_gone_mid_upload_leaves_nothing(start_serve, poll):
    server = start_serve()
    sock = _raw_upload(server.port, server.key, 5_000_000, FILE_PART + b"\0" * 200_000)
    uploads = Path(server.data_dir) / "uploads"
    poll(lambda: files_in(uploads) != [], timeout=10)  # the partial file is being written
    sock.close()
    poll(lambda: files_in(uploads) == [], timeout=10)
    assert httpx.get(f"{server.base}/healthz", timeout=5).status_code == 200


@pytest.mark.slow
def test_cancel_stops_a_running_task_and_removes_its_files(start_serve, poll, mp4_bytes):
    server = start_serve(**SLOW)
    task_id = submit(server, mp4_bytes(640, 360, frames=60), "4k")["task_id"]
    results = Path(server.data_dir) / "results" / task_id
    poll(lambda: status(server, task_id)["status"] == "IN_PROGRESS" and files_in(results))
    canceled = httpx.post(f"{server.base}{UPSCALE}/{task_id}/cancel", headers=server.auth)
    assert canceled.status_code == 200 and canceled.json()["data"]["status"] == "CANCELED"
    # The work stops within two seconds (then its partial output is removed); the margin
    # here allows for a loaded machine.
    poll(lambda: not results.exists(), timeout=10)
    assert files_in(Path(server.data_dir) / "uploads") == []
    view = status(server, task_id)
    assert view["status"] == "CANCELED" and "error" not in view and "result" not in view


@pytest.mark.slow
def test_a_task_past_its_timeout_is_timed_out(start_serve, poll, mp4_bytes):
    server = start_serve(AVATAR_TASK_TIMEOUT_S="1.5", **SLOW)
    task_id = submit(server, mp4_bytes(640, 360, frames=60), "4k")["task_id"]
    view = poll(lambda: (v := status(server, task_id))["status"] == "TIMED_OUT" and v)
    assert view["stage"] == "timed_out"
    assert view["error"]["code"] == "TIMED_OUT"
    assert "result" not in view and "billing" not in view
    data = Path(server.data_dir)
    poll(lambda: not (data / "results" / task_id).exists(), timeout=10)
    assert files_in(data / "uploads") == []
