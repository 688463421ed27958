"""Speed of the built-in avatar generator (`service.generators.procedural`), on one core.

    python -m bench.generation [--prompts 12] [--rounds 3]

Renders the same set of prompts (every hair style, backdrop and accessory turns up among them) at
256, 512 and 1024 px a side, the sizes interleaved round by round, and prints per size the
median and worst time of the drawing, of the PNG encoding and of the whole `render` call (what a
task worker spends on one generation), plus the PNG size. numpy runs its elementwise work on
one thread, so this is one core's figure."""

from __future__ import annotations

import argparse
import io
import statistics
import time

from PIL import Image

from service.generators.procedural import PNG_SETTINGS, portrait
from service.generators.traits import traits_of

SIZES = (256, 512, 1024)
EXTRAS = ("", "glasses", "beard", "long hair, earrings", "curly, hat", "freckles")


def _one(prompt: str, seed: int, side: int) -> tuple[float, float, int]:
    """(draw seconds, encode seconds, PNG bytes) of one render, timed in its two parts."""
    start = time.perf_counter()
    pixels = portrait(traits_of(prompt, seed), side, side)
    drawn = time.perf_counter()
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, format="PNG", **PNG_SETTINGS)
    return drawn - start, time.perf_counter() - drawn, len(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    prompts = [f"portrait {i}, {EXTRAS[i % len(EXTRAS)]}" for i in range(args.prompts)]
    samples: dict[int, list[tuple[float, float, int]]] = {side: [] for side in SIZES}
    for side in SIZES:  # warm-up: imports, caches, first allocations
        _one(prompts[0], 0, side)
    for _ in range(args.rounds):
        for i, prompt in enumerate(prompts):
            for side in SIZES:
                samples[side].append(_one(prompt, i, side))
    print(f"{len(prompts)} prompts x {args.rounds} rounds per size; times in ms")
    print(f"{'size':>9} {'draw p50':>9} {'encode p50':>11} {'total p50':>10} {'total max':>10} "
          f"{'PNG KiB p50':>12}")  # fmt: skip
    for side, runs in samples.items():
        draw = statistics.median(r[0] for r in runs) * 1000
        encode = statistics.median(r[1] for r in runs) * 1000
        totals = [(r[0] + r[1]) * 1000 for r in runs]
        total, worst = statistics.median(totals), max(totals)
        kib = statistics.median(r[2] for r in runs) / 1024
        print(f"{side:>4}x{side:<4} {draw:>9.0f} {encode:>11.0f} {total:>10.0f} {worst:>10.0f} "
              f"{kib:>12.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
