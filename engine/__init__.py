"""The avatar-service upscaling engine: box fitting, resampling kernels, the video pipeline."""

from importlib.metadata import PackageNotFoundError, version

from engine.errors import Canceled, EngineError, InvalidAudio, InvalidVideo, TargetNotLarger
from engine.fit import RESOLUTIONS, fit_box
from engine.resample import FILTERS, KERNELS, Filter, Kernel, kernel_info, resample
from engine.video.audio import DecodedAudio, decode_audio, wav_bytes
from engine.video.compose import AAC_RATES, ComposedVideo, compose, frame_count
from engine.video.pipeline import MAX_CRF, X264_PRESETS, Preset, UpscaleResult, upscale
from engine.video.probe import VideoInfo, plan, probe
from engine.video.segments import (
    Segment,
    SegmentPlan,
    join_segments,
    plan_segments,
    upscale_segment,
)

try:
    __version__ = version("avatar-service")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "AAC_RATES",
    "FILTERS",
    "KERNELS",
    "MAX_CRF",
    "RESOLUTIONS",
    "X264_PRESETS",
    "Canceled",
    "ComposedVideo",
    "DecodedAudio",
    "EngineError",
    "Filter",
    "InvalidAudio",
    "InvalidVideo",
    "Kernel",
    "Preset",
    "Segment",
    "SegmentPlan",
    "TargetNotLarger",
    "UpscaleResult",
    "VideoInfo",
    "__version__",
    "compose",
    "decode_audio",
    "fit_box",
    "frame_count",
    "join_segments",
    "kernel_info",
    "plan",
    "plan_segments",
    "probe",
    "resample",
    "upscale",
    "upscale_segment",
    "wav_bytes",
]
