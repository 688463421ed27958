"""Type stub of the compiled module engine._native (native/bindings.cpp)."""

import numpy as np
import numpy.typing as npt

MAX_OUTPUT_SIDE: int
MAX_SCALE: int
ISAS: tuple[str, ...]

def fit_box(width: int, height: int, resolution: str) -> tuple[int, int] | None: ...
def box_size(width: int, height: int, resolution: str) -> tuple[int, int]: ...
def fit_box_table(
    max_w: int, max_h: int, resolution: str
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]: ...
def resample(
    plane: npt.NDArray[np.uint8],
    out_w: int,
    out_h: int,
    filter: str,
    dx: float,
    dy: float,
    threads: int | None,
    out: npt.NDArray[np.uint8] | None,
    isa: str | None,
) -> tuple[npt.NDArray[np.uint8], str]: ...
def detail2x(
    plane: npt.NDArray[np.uint8],
    weights: npt.NDArray[np.float32],
    thresholds: npt.NDArray[np.float32],
    threads: int | None,
    out: npt.NDArray[np.uint8] | None,
    isa: str | None,
) -> tuple[npt.NDArray[np.uint8], str]: ...
def weight_table(
    in_size: int, out_size: int, filter: str, shift: float
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]: ...
def kernel_info() -> dict[str, object]: ...
