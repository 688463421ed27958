"""The pipeline's stage threads: background stages yield the CPU to the encoder."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from engine.video.stages import StageThreads

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="per-thread policies are Linux's")


def _policy_of_stage(background: bool) -> tuple[int, int]:
    seen: list[tuple[int, int]] = []

    def body() -> None:
        tid = threading.get_native_id()
        seen.append((os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid)))

    threads = StageThreads()
    threads.start("probe", body, background=background)
    threads.close()
    assert threads.error is None
    return seen[0]


def test_a_background_stage_runs_as_batch_at_low_priority():
    policy, nice = _policy_of_stage(background=True)
    assert policy == os.SCHED_BATCH
    assert nice >= 15


def test_a_foreground_stage_keeps_the_callers_policy():
    caller = os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)
    assert _policy_of_stage(background=False) == caller
