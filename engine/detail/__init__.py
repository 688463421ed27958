"""The learned `detail` filter's model: per-bucket, per-phase 5 x 5 weights and the levels that
pick a pixel's bucket, shipped as `weights.npz` beside this file (made by
`python -m engine.train_detail`, which records its command and library versions in the file)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.detail.reference import BUCKETS, PHASES, TAPS

SHIPPED = Path(__file__).with_name("weights.npz")


@dataclass(frozen=True)
class Model:
    weights: np.ndarray  # float32 (BUCKETS, PHASES, TAPS), C-contiguous
    thresholds: np.ndarray  # float32 (2,): trace level of strength 1, coherence level
    about: dict[str, object]  # how the weights were made

    def __post_init__(self) -> None:
        if self.weights.shape != (BUCKETS, PHASES, TAPS) or self.weights.dtype != np.float32:
            raise ValueError(f"weights must be float32 {(BUCKETS, PHASES, TAPS)}")
        if self.thresholds.shape != (2,) or self.thresholds.dtype != np.float32:
            raise ValueError("thresholds must be float32 (2,)")
        if not (np.isfinite(self.weights).all() and np.isfinite(self.thresholds).all()):
            raise ValueError("weights and thresholds must be finite")


def save(model: Model, path: Path) -> None:
    np.savez_compressed(
        path,
        weights=model.weights,
        thresholds=model.thresholds,
        about=np.array(json.dumps(model.about, sort_keys=True)),
    )


def load(path: Path) -> Model:
    with np.load(path, allow_pickle=False) as data:
        weights = np.ascontiguousarray(data["weights"])
        about = json.loads(str(data["about"]))
        return Model(weights, np.ascontiguousarray(data["thresholds"]), about)


@functools.cache
def shipped() -> Model:
    """The model in the package (read once per process)."""
    return load(SHIPPED)
