"""A supervisor for the processes of `serve`: it starts each role in its own process, watches
them, restarts one that dies (with back-off, so a crash loop does not spin), and on SIGTERM or
SIGINT stops them all and returns.

Children are started with the `spawn` method, never `fork`: a forked child inherits whatever
lock another thread of the parent held at that instant, and can deadlock on it. Each child asks
the kernel for SIGTERM when the supervisor dies, so no process of a killed `serve` lingers
holding the port or working on tasks."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

log = logging.getLogger("service.supervisor")

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Role:
    """One supervised process: `target(*args)` runs in it (a module-level function, so it can be
    started by `spawn`). The target ends its work cleanly on SIGTERM."""

    name: str
    target: Callable[..., None]
    args: tuple[Any, ...] = ()


@dataclass
class Backoff:
    """Delay before restarting a role: doubles after each quick death, resets after a process
    has run for `stable_s`."""

    initial_s: float = 0.5
    max_s: float = 30.0
    stable_s: float = 60.0
    current_s: float = field(default=0.0, init=False)

    def after_exit(self, ran_s: float) -> float:
        if ran_s >= self.stable_s or self.current_s == 0.0:
            self.current_s = self.initial_s
        else:
            self.current_s = min(self.max_s, self.current_s * 2)
        return self.current_s


def die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return


def configure_logging() -> None:
    """INFO and above to stderr, one line each: in the supervisor and in every child (a child
    started by `spawn` begins with no logging set up, and would drop its INFO lines)."""
    logging.basicConfig(level=logging.INFO, format="[%(levelname)s] %(name)s: %(message)s")


def _child_main(role: Role, parent_pid: int) -> None:
    die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        return
    # Ctrl-C reaches the whole process group; the supervisor decides when children stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging()
    role.target(*role.args)


@dataclass
class _Slot:
    role: Role
    backoff: Backoff
    process: BaseProcess | None = None
    started: float = 0.0
    restart_at: float | None = None


class Supervisor:
    def __init__(self, roles: list[Role], *, grace_s: float = 30.0) -> None:
        self._slots = [_Slot(role, Backoff()) for role in roles]
        self._grace_s = grace_s
        self._context = multiprocessing.get_context("spawn")
        self._stopping = False

    def run(self) -> None:
        """Run until SIGTERM or SIGINT, then stop every child (SIGTERM, then SIGKILL after the
        grace period) and return."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        previous = signal.set_wakeup_fd(wake_w)
        handlers = {sig: signal.signal(sig, self._request_stop) for sig in _STOP_SIGNALS}
        try:
            for slot in self._slots:
                self._start(slot)
            while not self._stopping:
                self._watch(wake_r)
        finally:
            self._stop_all()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(previous)
            os.close(wake_r)
            os.close(wake_w)

    def _request_stop(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _start(self, slot: _Slot) -> None:
        process = self._context.Process(
            target=_child_main, args=(slot.role, os.getpid()), name=slot.role.name, daemon=False
        )
        process.start()
        slot.process, slot.started, slot.restart_at = process, time.monotonic(), None

    def _watch(self, wake_fd: int) -> None:
        """Wait for a child to exit, a restart to fall due or a signal; act on what happened."""
        running = {slot.process.sentinel: slot for slot in self._slots if slot.process}
        due = [slot.restart_at for slot in self._slots if slot.restart_at is not None]
        timeout = max(0.0, min(due) - time.monotonic()) if due else None
        ready = wait([*running, wake_fd], timeout)
        if wake_fd in ready:
            os.read(wake_fd, 512)
        for sentinel in ready:
            if (slot := running.get(sentinel)) is not None and not self._stopping:
                self._schedule_restart(slot)
        now = time.monotonic()
        for slot in self._slots:
            if slot.restart_at is not None and slot.restart_at <= now and not self._stopping:
                self._start(slot)

    def _schedule_restart(self, slot: _Slot) -> None:
        process = slot.process
        process.join()
        ran_s = time.monotonic() - slot.started
        delay = slot.backoff.after_exit(ran_s)
        log.warning(
            "%s (pid %s) exited with code %s after %.1f s; restarting in %.1f s",
            slot.role.name, process.pid, process.exitcode, ran_s, delay,
        )  # fmt: skip
        slot.process, slot.restart_at = None, time.monotonic() + delay

    def _stop_all(self) -> None:
        alive = [slot.process for slot in self._slots if slot.process and slot.process.is_alive()]
        for process in alive:
            _signal(process, signal.SIGTERM)
        deadline = time.monotonic() + self._grace_s
        for process in alive:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning(
                    "%s did not stop within %.0f s; killing it", process.name, self._grace_s
                )
                process.kill()
                process.join()


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _signal(process: BaseProcess, signum: int) -> None:
    try:
        os.kill(process.pid, signum)
    except ProcessLookupError:
        return


def run_until_terminated(main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run `main(stop)` on a fresh event loop; SIGTERM sets `stop`, and `main` winds down."""

    async def runner() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await main(stop)

    asyncio.run(runner())


async def first_of(waits: list[Awaitable], alongside: set[asyncio.Future] = frozenset()) -> None:
    """Wait until the first of `waits` (or of the futures `alongside`) is done; the rest of
    `waits` are cancelled, those `alongside` are left running."""
    started = [asyncio.ensure_future(awaitable) for awaitable in waits]
    await asyncio.wait({*started, *alongside}, return_when=asyncio.FIRST_COMPLETED)
    for future in started:
        future.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await future
