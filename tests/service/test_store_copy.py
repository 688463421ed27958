"""`avatar-service store copy`: a data dir that served on one machine, copied into PostgreSQL
and S3, serves the same keys, agents, routes, avatars, results and signed links from a new node;
a data dir in use and a target that is not empty are refused."""

from __future__ import annotations

import httpx
import pytest

from tests.service.conftest import _stop

pytestmark = pytest.mark.slow
UPSCALE = "/v1/video/upscale"


def test_a_copied_data_dir_serves_the_same_from_postgresql_and_s3(
    start_serve, run_cli, database_url, s3_server, mp4_bytes, png_bytes, poll, tmp_path
):
    s3_env = s3_server.env("copied")
    first = start_serve(AVATAR_X264_PRESET="ultrafast")
    with httpx.Client(base_url=first.base, headers=first.auth, timeout=30) as client:
        agent = client.post("/v1/agents", json={"name": "Ada"}).json()["data"]
        route = client.post(f"/v1/agents/{agent['agent_id']}/routes", json={}).json()["data"]
        files = {"image": ("a.png", png_bytes(), "image/png")}
        avatar = client.post("/v1/avatars", files=files).json()["data"]
        upload = {"file": ("clip.mp4", mp4_bytes(), "video/mp4")}
        task_id = client.post(f"{UPSCALE}?resolution=1080p", files=upload).json()["data"]["task_id"]

        def result() -> str | None:
            data = client.get(f"{UPSCALE}/{task_id}").json()["data"]
            return data["result"]["output"]["file_url"] if data["status"] == "COMPLETED" else None

        link = poll(result, timeout=60)
        video = httpx.get(link, timeout=30).content
    env = {**first.env, **s3_server.credentials}
    held = run_cli("store", "copy", "--to", database_url, "--data-dir", first.data_dir, env=env)
    assert held.returncode == 4 and "in use" in held.stderr
    _stop(first.process)

    target = ["--to", database_url, "--s3-bucket", s3_env["AVATAR_S3_BUCKET"]]
    target += ["--s3-endpoint-url", s3_env["AVATAR_S3_ENDPOINT_URL"]]
    target += ["--s3-prefix", s3_env["AVATAR_S3_PREFIX"]]
    copied = run_cli("store", "copy", *target, "--data-dir", first.data_dir, env=env)
    assert copied.returncode == 0, copied.stderr
    again = run_cli("store", "copy", *target, "--data-dir", first.data_dir, env=env)
    assert again.returncode == 2 and "already" in again.stderr, again.stderr

    moved = start_serve(
        data_dir=str(tmp_path / "new-node"), AVATAR_DATABASE_URL=database_url, **s3_env
    )
    assert moved.key is None  # the store had its first key already
    with httpx.Client(base_url=moved.base, headers=first.auth, timeout=30) as client:
        assert client.get(f"/v1/agents/{agent['agent_id']}").json()["data"]["name"] == "Ada"
        routes = client.get("/v1/agent-routes").json()["data"]["items"]
        assert [r["id"] for r in routes] == [route["id"]]
        image = client.get(avatar["image_url"].replace(first.base, moved.base))
        assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    # A link signed before the move still works: the signing key moved with the data.
    assert httpx.get(link.replace(first.base, moved.base), timeout=30).content == video
