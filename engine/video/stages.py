"""Thread plumbing for the pipeline: bounded channels that give up when the run stops.

Each stage runs in its own thread and passes items on through a bounded queue, so a fast stage
blocks on `put` and the slowest one sets the pace. A stage that fails records its exception and
sets the shared stop event; every blocked `put`/`get` notices within `POLL_S`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

POLL_S = 0.05
END = object()  # the last item a stage sends


class Stopped(Exception):
    """The run was stopped (by cancel or another stage's failure) while this stage waited."""


class Channel:
    def __init__(self, stop: threading.Event, size: int) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self._stop = stop

    def put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=POLL_S)
                return
            except queue.Full:
                continue
        raise Stopped

    def get(self, idle: Callable[[], None] | None = None) -> Any:
        """The next item; `idle` runs while waiting (it may raise to abandon the wait)."""
        while not self._stop.is_set():
            try:
                return self._queue.get(timeout=POLL_S)
            except queue.Empty:
                if idle is not None:
                    idle()
        raise Stopped


_BACKGROUND_NICE = 15


def _run_in_background() -> None:
    """SCHED_BATCH at nice 15 for the calling thread, where Linux offers it.

    The stage then runs mostly where the other threads leave a core idle: SCHED_BATCH does
    not preempt them when it wakes, and nice 15 gives it 1/28 of their share when they
    compete. SCHED_IDLE would be stricter still, but starves the stage (and so the whole
    upscale) behind any busy process: 20x slower under two busy loops, against 1.7x here.
    """
    if not hasattr(os, "SCHED_BATCH"):
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, _BACKGROUND_NICE)


class StageThreads:
    """Starts stage functions in daemon threads and keeps the first error any of them raised."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, name: str, body: Callable[[], None], *, background: bool = False) -> None:
        """Run `body` in a thread; a `background` one yields the CPU to the others (Linux)."""
        thread = threading.Thread(target=self._run, args=(body, background), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, body: Callable[[], None], background: bool) -> None:
        if background:
            _run_in_background()
        try:
            body()
        except Stopped:
            pass
        except BaseException as exc:
            with self._lock:
                if self.error is None:
                    self.error = exc
            self.stop.set()

    def close(self) -> None:
        """Stop every stage and wait for its thread (each notices within one poll)."""
        self.stop.set()
        for thread in self._threads:
            thread.join()
