"""A real `avatar-service serve` process on a free loopback port, and the offline `keys`
commands against its data dir."""

from __future__ import annotations

import os
import signal
import socket

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


def test_unusable_data_dir_is_a_clear_error(tmp_path, run_cli, free_port):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for args in (["serve", "--port", str(free_port())], ["keys", "list"]):
        result = run_cli(*args, "--data-dir", str(blocker / "data"))
        assert result.returncode == 1, result.stderr
        assert "avatar-service: cannot open" in result.stderr
        assert "Traceback" not in result.stderr


def test_a_second_serve_on_a_busy_port_fails_at_once(server, run_cli, tmp_path):
    other_dir = str(tmp_path / "other")
    result = run_cli("serve", "--port", str(server.port), "--data-dir", other_dir, env=server.env)
    assert result.returncode == 3, result.stderr
    assert result.stderr == f"avatar-service: port {server.port} is already in use\n"
    # The first server keeps every request: a key of its own data dir works on each one.
    for _ in range(20):
        assert httpx.get(f"{server.base}/v1/agents", headers=server.auth).status_code == 200


def test_a_port_held_by_another_program_is_refused(run_cli, tmp_path, free_port):
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        result = run_cli("serve", "--port", str(port), "--data-dir", str(tmp_path))
    assert result.returncode == 3
    assert result.stderr == f"avatar-service: port {port} is already in use\n"


def test_a_second_serve_on_the_same_data_dir_fails(server, run_cli, free_port):
    port = str(free_port())
    result = run_cli("serve", "--port", port, "--data-dir", server.data_dir, env=server.env)
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith(f"avatar-service: the data dir {server.data_dir} is in use")
    assert f"(pid {server.process.pid})" in result.stderr


def test_a_crashed_serve_frees_its_data_dir_and_port(start_serve, poll):
    first = start_serve()
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    # Its children end with it (nothing keeps answering on the port)...
    poll(lambda: _refused(first.port), timeout=20)
    # ...and the lock went with the process: a new serve takes the same data dir and port,
    # and says how to make a key, since the first one was printed only once.
    second = start_serve(data_dir=first.data_dir, port=first.port)
    assert second.key is None
    assert httpx.get(f"{second.base}/v1/agents", headers=first.auth).status_code == 200


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def test_restart_says_how_to_make_a_key(start_serve, run_cli):
    first = start_serve()
    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(timeout=30) == 0
    restarted = start_serve(data_dir=first.data_dir, port=first.port)
    command = f"avatar-service keys create --owner default --data-dir {first.data_dir}"
    assert restarted.key is None and command in restarted.banner
    created = run_cli("keys", "create", "--owner", "default", "--data-dir", first.data_dir)
    assert created.returncode == 0 and created.stdout.strip().splitlines()[-1].startswith("ak_")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--port", "abc"], "argument --port: must be a whole number from 1 to 65535 (got 'abc')"),
        (["--port", "99999"], "argument --port: must be a whole number from 1 to 65535"),
        (["--http-workers", "0"], "argument --http-workers: must be a whole number from 1 to 64"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_flags_are_one_line_naming_the_flag(run_cli, tmp_path, args, expected):
    result = run_cli("serve", "--data-dir", str(tmp_path), *args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr
    assert "AVATAR_PORT" not in result.stderr and "Traceback" not in result.stderr


def test_serve_help_shows_defaults_and_variables(run_cli):
    result = run_cli("serve", "--help")
    assert result.returncode == 0
    assert "(default: 8000; env AVATAR_PORT)" in result.stdout
    assert "AVATAR_QUEUE_LIMIT" in result.stdout and "(default: 100)" in result.stdout
