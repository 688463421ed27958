"""Tasks are durable: an upscale whose `serve` was killed mid-run completes after the restart
and its webhook arrives once; SIGTERM puts a running task back in the queue; a run whose
worker keeps dying is tried again at most twice. Also the whole upscale flow with its one
signed webhook, bearer token and payload."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import httpx
import pytest

from service.domain import task_runs
from service.domain.files import upload_key
from service.domain.ids import new_id
from service.domain.kinds import task_kinds
from service.domain.models import Task
from service.domain.tasks import new_task, submit
from service.domain.webhook_signing import verify
from service.runtime import open_context
from service.settings import load_settings

pytestmark = pytest.mark.slow

UPSCALE = "/v1/video/upscale"
FAST = {"AVATAR_X264_PRESET": "ultrafast", "AVATAR_WEBHOOK_ALLOW_PRIVATE": "1"}
# Slow enough to be caught mid-run: the pure-numpy kernel, 640x360 -> 2560x1440, 60 frames.
SLOW = {**FAST, "AVATAR_KERNEL": "numpy"}


def submit_upscale(server, video: bytes, resolution: str, webhook: str) -> str:
    response = httpx.post(
        f"{server.base}{UPSCALE}?resolution={resolution}",
        headers=server.auth,
        files={"file": ("clip.mp4", video, "video/mp4")},
        data={"webhook_url": webhook, "webhook_token": "hook-token"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]["task_id"]


def view(server, auth: dict, task_id: str) -> dict:
    return httpx.get(f"{server.base}{UPSCALE}/{task_id}", headers=auth, timeout=10).json()["data"]


def stored(data_dir: str, task_id: str) -> Task:
    async def read() -> Task:
        async with open_context(load_settings({}, data_dir=Path(data_dir))) as ctx:
            return await ctx.store.get_task(task_id)

    return asyncio.run(read())


def test_one_signed_webhook_with_the_final_status(start_serve, receiver, poll, mp4_bytes):
    server = start_serve(**FAST)
    task_id = submit_upscale(server, mp4_bytes(), "1080p", receiver.url())
    (delivery,) = receiver.wait_for(1)
    secret = httpx.get(f"{server.base}/v1/webhooks/secret", headers=server.auth).json()
    assert verify(secret["data"]["secret"], delivery.headers, delivery.body)
    assert delivery.headers["authorization"] == "Bearer hook-token"
    assert delivery.headers["webhook-id"] == task_id
    data = json.loads(delivery.body)["data"]
    assert (data["task_id"], data["status"]) == (task_id, "COMPLETED")
    assert data["status_url"] == f"{server.base}{UPSCALE}/{task_id}"
    assert httpx.get(data["result"]["output"]["file_url"], timeout=30).status_code == 200
    outcome = poll(lambda: view(server, server.auth, task_id).get("webhook"))
    assert outcome["delivered"] and outcome["status_code"] == 200
    assert "hook-token" not in json.dumps(view(server, server.auth, task_id))
    assert len(receiver.requests) == 1


def test_a_task_interrupted_by_a_crash_completes_after_the_restart(
    start_serve, receiver, poll, mp4_bytes
):
    first = start_serve(**SLOW)
    task_id = submit_upscale(first, mp4_bytes(640, 360, frames=60), "4k", receiver.url())
    poll(lambda: view(first, first.auth, task_id)["status"] == "IN_PROGRESS")
    os.killpg(first.process.pid, signal.SIGKILL)  # every process of serve at once
    first.process.wait()
    second = start_serve(data_dir=first.data_dir, port=first.port, **FAST)
    done = poll(lambda: (v := view(second, first.auth, task_id))["status"] == "COMPLETED" and v)
    assert done["result"]["output"]["frames"] == 60
    assert stored(first.data_dir, task_id).reruns == 1
    (delivery,) = receiver.wait_for(1)
    assert json.loads(delivery.body)["data"]["status"] == "COMPLETED"
    poll(lambda: view(second, first.auth, task_id).get("webhook"))
    assert len(receiver.requests) == 1  # once, however the run was interrupted


def test_sigterm_puts_a_running_task_back_in_the_queue(start_serve, receiver, poll, mp4_bytes):
    first = start_serve(**SLOW)
    task_id = submit_upscale(first, mp4_bytes(640, 360, frames=60), "4k", receiver.url())
    poll(lambda: view(first, first.auth, task_id)["status"] == "IN_PROGRESS")
    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(timeout=30) == 0
    waiting = stored(first.data_dir, task_id)
    assert (waiting.status, waiting.stage, waiting.reruns) == ("IN_QUEUE", "queued", 0)
    assert receiver.requests == []  # not final: no webhook
    second = start_serve(data_dir=first.data_dir, port=first.port, **FAST)
    poll(lambda: view(second, first.auth, task_id)["status"] == "COMPLETED")


def test_a_run_whose_worker_keeps_dying_is_tried_again_twice(api):
    ctx, kinds = api.ctx, task_kinds()
    api.key("alice")

    async def scenario() -> Task:
        owner = await ctx.store.get_owner_by_name("alice")
        task_id = new_id("tsk")
        params = {"resolution": "1080p", "input_key": upload_key(task_id)}
        task = new_task(task_id, owner.owner_id, "upscale", params, ctx.clock.now_ms())
        await submit(ctx, task, None)
        for _ in range(3):  # the first run and its two reruns: each worker dies
            assert (await task_runs.claim(ctx, "wrk_doomed")).task_id == task_id
            api.clock.advance(task_runs.LEASE_MS / 1000 + 1)  # its lease lapses
            await task_runs.recover_lapsed(ctx, kinds)
        return await ctx.store.get_task(task_id)

    with api.client.portal() as portal:
        task = portal.call(scenario)
    assert (task.status, task.reruns) == ("FAILED", 2)
    assert task.error.code == "WORKER_LOST" and "run again 2 times" in task.error.message
