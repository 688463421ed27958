"""How real inputs lose detail, for training and judging the learned `detail` filter.

A frame reaches the upscaler smaller than the scene (area downscale: each pixel the mean of a
factor x factor block) and compressed (H.264). `degrade` applies both to a luma plane; the
chroma of the encoded frame is flat grey, since only luma goes through the learned filter.
"""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np


def area_downscale(plane: np.ndarray, factor: int) -> np.ndarray:
    """Each output pixel the rounded mean of a factor x factor block; the plane is cropped to
    whole blocks first."""
    h, w = plane.shape[0] // factor, plane.shape[1] // factor
    blocks = plane[: h * factor, : w * factor].astype(np.float64)
    means = blocks.reshape(h, factor, w, factor).mean(axis=(1, 3))
    return np.clip(np.rint(means), 0, 255).astype(np.uint8)


def h264_roundtrip(plane: np.ndarray, crf: float, preset: str = "medium") -> np.ndarray:
    """The luma plane after one encode (libx264, yuv420p, `crf`) and decode. Sides must be even."""
    h, w = plane.shape
    if h % 2 or w % 2:
        raise ValueError(f"plane sides must be even for yuv420p, got {w}x{h}")
    yuv = np.full((h * 3 // 2, w), 128, np.uint8)
    yuv[:h] = plane
    encoder = av.CodecContext.create("libx264", "w")
    encoder.width, encoder.height, encoder.pix_fmt = w, h, "yuv420p"
    encoder.time_base = Fraction(1, 25)
    encoder.options = {"crf": str(crf), "preset": preset, "threads": "1"}
    packets = [
        *encoder.encode(av.VideoFrame.from_ndarray(yuv, format="yuv420p")),
        *encoder.encode(),
    ]
    decoder = av.CodecContext.create("h264", "r")
    frames = [frame for packet in packets for frame in decoder.decode(packet)]
    frames += decoder.decode(None)
    if len(frames) != 1:
        raise RuntimeError(f"expected one decoded frame, got {len(frames)}")
    return frames[0].to_ndarray(format="yuv420p")[:h].copy()


def degrade(original: np.ndarray, factor: int, crf: float) -> tuple[np.ndarray, np.ndarray]:
    """(target, input): the original cropped to sides that are multiples of 2 * factor, and
    its area downscale by `factor` after an H.264 round trip at `crf`."""
    step = 2 * factor
    h, w = original.shape[0] // step * step, original.shape[1] // step * step
    target = np.ascontiguousarray(original[:h, :w])
    return target, h264_roundtrip(area_downscale(target, factor), crf)


def codec_versions() -> dict[str, str]:
    """FFmpeg's library versions: the encoder that degrades is part of what training depends on."""
    return {name: ".".join(map(str, v)) for name, v in av.library_versions.items()}
