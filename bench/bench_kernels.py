"""pytest-benchmark cases for the kernels (not part of the default test run).

Run from the repository root: `python -m pytest bench/bench_kernels.py`
(`python -m` puts the root on sys.path so `bench` imports; pytest-benchmark groups the
rows per filter, so each kernel sits beside swscale on the same frame).
"""

from __future__ import annotations

import pytest

import engine
from bench.kernels import FILTERS, ours, swscale
from bench.scene import natural_yuv420p

OUT = (3840, 2160)


@pytest.fixture(scope="module")
def frame():
    return natural_yuv420p(1920, 1080)


def cases():
    cores = engine.kernel_info()["threads"]
    return [
        ("native-1-thread", lambda src, f: ours(src, OUT, f, threads=1)),
        (f"native-{cores}-threads", lambda src, f: ours(src, OUT, f, threads=cores)),
        ("numba", lambda src, f: ours(src, OUT, f, threads=None, kernel="numba")),
        ("swscale-1-thread", lambda src, f: swscale(src, OUT, f, threads=1, fresh=False)),
    ]


@pytest.mark.parametrize("filt", FILTERS)
@pytest.mark.parametrize(("name", "factory"), cases(), ids=[name for name, _ in cases()])
def test_upscale_1080p_to_2160p_yuv420p(benchmark, frame, filt, name, factory):
    run = factory(frame, filt)
    run()  # warm-up: JIT compilation, weight tables, reused buffers
    benchmark.group = f"1080p->2160p yuv420p {filt}"
    benchmark.pedantic(run, rounds=15, warmup_rounds=1)
