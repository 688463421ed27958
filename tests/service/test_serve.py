"""A real `avatar-service serve` process on a free loopback port, and the offline `keys`
commands against its data dir."""

from __future__ import annotations

import os

import httpx
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def server(start_serve):
    return start_serve(
        AVATAR_SESSION_MAX_S="1", AVATAR_SWEEP_INTERVAL_S="0.2", AVATAR_HTTP_WORKERS="2"
    )


def test_serve_end_to_end(server, poll, png_bytes):
    base, auth = server.base, server.auth
    with httpx.Client(base_url=base, headers=auth, timeout=10) as client:
        assert client.get("/healthz").json()["data"]["status"] == "ok"
        assert httpx.get(f"{base}/v1/agents").status_code == 401
        agent = client.post("/v1/agents", json={"name": "Ada"}).json()["data"]
        route = client.post(f"/v1/agents/{agent['agent_id']}/routes", json={}).json()["data"]
        assert route["url"] == f"{base}/r/{route['id']}"
        assert client.get(f"/v1/agent-routes/{route['id']}").json()["data"] == route
        assert client.get("/schema/openapi.json").status_code == 200

        # The sweeper of `serve` closes the session after AVATAR_SESSION_MAX_S and bills it.
        files = {"image": ("a.png", png_bytes(), "image/png")}
        avatar = client.post("/v1/avatars", files=files).json()["data"]
        body = {"avatar_id": avatar["avatar_id"]}
        start = client.post("/v1/interactive/start_session", json=body)
        sid = start.json()["data"]["session"]["session_id"]
        usage = poll(lambda: client.get("/v1/usage").json()["data"]["items"])
        assert usage[0]["ref_id"] == sid and usage[0]["seconds"] == 1.0


def test_keys_commands_against_a_running_server(server, poll, run_cli):
    base, data_dir, env = server.base, server.data_dir, server.env
    cli = run_cli
    created = cli("keys", "create", "--owner", "bob", "--data-dir", data_dir, env=env)
    assert created.returncode == 0, created.stderr
    key_id = created.stdout.split()[3]
    bob_key = created.stdout.strip().splitlines()[-1]
    auth = {"Authorization": f"Bearer {bob_key}"}
    assert httpx.get(f"{base}/v1/agents", headers=auth).status_code == 200

    listing = cli("keys", "list", "--data-dir", data_dir, env=env)
    assert key_id in listing.stdout and "bob" in listing.stdout and bob_key not in listing.stdout

    revoked = cli("keys", "revoke", key_id, "--data-dir", data_dir, env=env)
    assert revoked.returncode == 0, revoked.stderr
    poll(lambda: httpx.get(f"{base}/v1/agents", headers=auth).status_code == 401, timeout=10)
    assert cli("keys", "revoke", "key_nope", "--data-dir", data_dir, env=env).returncode == 1


def test_serve_refuses_bad_configuration(tmp_path, run_cli):
    env = {**os.environ, "AVATAR_RATE_LIMIT": "lots"}
    result = run_cli("serve", "--data-dir", str(tmp_path), env=env)
    assert result.returncode == 2
    assert "AVATAR_RATE_LIMIT" in result.stderr


def test_unusable_data_dir_is_a_clear_error(tmp_path, run_cli):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for args in (["serve", "--port", "0"], ["keys", "list"]):
        result = run_cli(*args, "--data-dir", str(blocker / "data"))
        assert result.returncode == 1, result.stderr
        assert "avatar-service: cannot open" in result.stderr
        assert "Traceback" not in result.stderr
