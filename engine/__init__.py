"""The avatar-service upscaling engine: box fitting, resampling kernels, the video pipeline."""

from importlib.metadata import PackageNotFoundError, version

from engine.errors import EngineError, InvalidVideo, TargetNotLarger
from engine.fit import RESOLUTIONS, fit_box
from engine.resample import FILTERS, KERNELS, resample

try:
    __version__ = version("avatar-service")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "FILTERS",
    "KERNELS",
    "RESOLUTIONS",
    "EngineError",
    "InvalidVideo",
    "TargetNotLarger",
    "__version__",
    "fit_box",
    "resample",
]
