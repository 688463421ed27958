"""Speed of the face finders (`service.generators.face_box`, and `face_mesh` when the `faces`
extra is installed), on one core.

    python -m bench.faces [--rounds 7]

Finds the face of scikit-image's astronaut photo stored at 512, 1024 and 2048 px a side (the
larger ones scaled up from it), the sizes and finders interleaved round by round, and prints per
finder and size the median and worst time of `find` (what storing an uploaded avatar spends on
it), beside the peer measured in the same rounds: decoding the PNG and scaling it to the size
searched, which any finder pays first. Also the points found on the 512 px image."""

from __future__ import annotations

import argparse
import io
import statistics
import time

from PIL import Image
from skimage import data

from service.domain.faces import FaceFinder
from service.generators.face_box import CascadeFaces
from service.generators.face_finders import mesh_available
from service.generators.face_image import decode_rgb

SIDES = (512, 1024, 2048)


def _png(side: int) -> bytes:
    image = Image.fromarray(data.astronaut()).resize((side, side), Image.Resampling.BICUBIC)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _timed(call, *args) -> float:
    start = time.perf_counter()
    call(*args)
    return time.perf_counter() - start


def _finders() -> dict[str, FaceFinder]:
    finders: dict[str, FaceFinder] = {"cascade": CascadeFaces()}
    if mesh_available():
        from service.generators.face_mesh import MeshFaces

        finders["mesh"] = MeshFaces()
    return finders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    images = {side: _png(side) for side in SIDES}
    finders = _finders()
    calls = {"decode (peer)": decode_rgb} | {name: f.find for name, f in finders.items()}
    for call in calls.values():  # warm-up: imports, model loading
        call(images[512])
    samples: dict[tuple[str, int], list[float]] = {(n, s): [] for n in calls for s in SIDES}
    for _ in range(args.rounds):
        for side in SIDES:
            for name, call in calls.items():
                samples[name, side].append(_timed(call, images[side]))
    print(f"astronaut, {args.rounds} rounds; times in ms")
    print(f"{'finder':>14} {'size':>9} {'p50':>7} {'max':>7}")
    for (name, side), runs in samples.items():
        p50, worst = statistics.median(runs) * 1000, max(runs) * 1000
        print(f"{name:>14} {side:>4}x{side:<4} {p50:>7.1f} {worst:>7.1f}")
    for name, finder in finders.items():
        print(f"{name}: {finder.find(images[512])}")


if __name__ == "__main__":
    main()
