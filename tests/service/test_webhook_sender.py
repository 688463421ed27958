"""The webhook sender of a real `serve`: one delivery that the check docs/api.md shows
verifies, a send cut short by a crash sent once more after the restart (same webhook id), and
a send under way when SIGTERM comes finished before `serve` exits. Tasks are queued from this
process beside `serve` (SQLite is shared between processes); their upload is missing, so the
task worker fails them and they owe their webhook."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path

import httpx

from service.domain.files import upload_key
from service.domain.ids import new_id
from service.domain.models import Task, WebhookTarget
from service.domain.tasks import new_task, submit
from service.runtime import open_context
from service.settings import load_settings

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def docs_verify():
    """The receiver's `verify` exactly as docs/api.md shows it."""
    section = API_MD.read_text(encoding="utf-8").split("## Webhooks\n", 1)[1].split("\n## ")[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    namespace: dict = {}
    exec(code, namespace)
    return namespace["verify"]


def queue_doomed_task(data_dir: str, url: str, facts: dict) -> str:
    """Queue an upscale whose upload is missing (from this process, beside `serve`): its
    worker fails it, and its webhook is owed."""

    async def queue() -> str:
        async with open_context(load_settings({}, data_dir=Path(data_dir))) as ctx:
            owner = await ctx.store.get_owner_by_name("default")
            task_id = new_id("tsk")
            params = {"resolution": "1080p", "input_key": upload_key(task_id)}
            now = ctx.clock.now_ms()
            task = new_task(
                task_id, owner.owner_id, "upscale", params, now, WebhookTarget(url), input=facts
            )
            await submit(ctx, task, None)
            return task_id

    return asyncio.run(queue())


def stored_task(data_dir: str, task_id: str) -> Task:
    async def read() -> Task:
        async with open_context(load_settings({}, data_dir=Path(data_dir))) as ctx:
            return await ctx.store.get_task(task_id)

    return asyncio.run(read())


def test_serve_sends_one_webhook_that_the_documented_check_verifies(
    start_serve, receiver, poll, upscale_facts
):
    server = start_serve(AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    task_id = queue_doomed_task(server.data_dir, receiver.url(), upscale_facts)
    request = receiver.wait_for(1)[0]
    secret = httpx.get(f"{server.base}/v1/webhooks/secret", headers=server.auth).json()["data"]
    assert docs_verify()(secret["secret"], request.headers, request.body)
    data = json.loads(request.body)["data"]
    assert (data["task_id"], data["status"]) == (task_id, "FAILED")
    assert data["error"]["code"] == "INPUT_MISSING"
    assert data["status_url"].endswith(f"/v1/video/upscale/{task_id}")
    outcome = poll(lambda: stored_task(server.data_dir, task_id).webhook_outcome)
    assert outcome.delivered and outcome.status_code == 200
    assert len(receiver.requests) == 1


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_whole_serve(pid: int) -> None:
    """SIGKILL `serve` and every process under it, as a power cut would stop them (the
    supervisor is frozen first, so it neither restarts nor warns its children)."""
    os.kill(pid, signal.SIGSTOP)
    for child in _descendants(pid):
        os.kill(child, signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)


def test_a_send_cut_short_by_a_crash_is_sent_once_more_after_restart(
    start_serve, receiver, poll, upscale_facts
):
    receiver.hang_first = 1  # the first attempt is under way when everything dies
    first = start_serve(AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    task_id = queue_doomed_task(first.data_dir, receiver.url(), upscale_facts)
    receiver.wait_for(1)
    kill_whole_serve(first.process.pid)
    first.process.wait(timeout=10)
    again = start_serve(data_dir=first.data_dir, AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    requests = receiver.wait_for(2)
    assert [r.headers["webhook-id"] for r in requests] == [task_id, task_id]
    outcome = poll(lambda: stored_task(again.data_dir, task_id).webhook_outcome)
    assert outcome.delivered and outcome.status_code == 200
    assert len(receiver.requests) == 2


def test_sigterm_lets_a_send_under_way_finish(start_serve, receiver, poll, upscale_facts):
    receiver.hang_first = 1
    server = start_serve(AVATAR_WEBHOOK_ALLOW_PRIVATE="1")
    task_id = queue_doomed_task(server.data_dir, receiver.url(), upscale_facts)
    receiver.wait_for(1)
    server.process.send_signal(signal.SIGTERM)

    def stopped_serving() -> bool:
        try:
            httpx.get(f"{server.base}/healthz", timeout=2)
        except httpx.TransportError:
            return True
        return False

    poll(stopped_serving)  # the supervisor has told every process to stop
    receiver.release()
    assert server.process.wait(timeout=30) == 0
    outcome = stored_task(server.data_dir, task_id).webhook_outcome
    assert outcome.delivered and outcome.status_code == 200


def test_a_failed_delivery_is_logged_by_serve(start_serve, poll, upscale_facts):
    """The sender is a child process of `serve`: its INFO lines reach serve's output too."""
    server = start_serve()  # private targets refused: loopback is not a public address
    task_id = queue_doomed_task(server.data_dir, "https://127.0.0.1:1/hook", upscale_facts)
    line = poll(lambda: next((n for n in list(server.log) if "not delivered" in n), None))
    assert task_id in line and "not a public address" in line
