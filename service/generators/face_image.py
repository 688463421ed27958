"""The pixels a face finder looks at: an image's bytes decoded to RGB and, when large, scaled
down, with the factor that maps points found there back to the stored image's pixels."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError

from service.domain.faces import FaceLandmarks, Point

# Faces are looked for in an image at most this many pixels a side: a portrait's face is a
# large part of it, and the cascade's time grows with the pixel count.
SEARCH_SIDE = 512


def decode_rgb(image: bytes, side: int = SEARCH_SIDE) -> tuple[np.ndarray, float]:
    """The image as (height, width, 3) uint8 at most `side` pixels a side, and the factor
    from its pixels to the original's. ValueError when the bytes are not a PNG, JPEG or WebP."""
    try:
        with Image.open(io.BytesIO(image), formats=("PNG", "JPEG", "WEBP")) as opened:
            rgb = opened.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not a PNG, JPEG or WebP image: {exc}") from None
    width, reduce = rgb.width, max(rgb.size) / side
    if reduce > 1:
        size = (max(1, round(rgb.width / reduce)), max(1, round(rgb.height / reduce)))
        rgb = rgb.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    return np.asarray(rgb), width / rgb.width


def scaled(face: FaceLandmarks, factor: float) -> FaceLandmarks:
    """`face` found in a scaled-down copy, in the original image's pixels."""
    if factor == 1.0:
        return face

    def point(p: Point) -> Point:
        return Point(p.x * factor, p.y * factor)

    return FaceLandmarks(
        left=face.left * factor,
        top=face.top * factor,
        width=face.width * factor,
        height=face.height * factor,
        left_eye=point(face.left_eye),
        right_eye=point(face.right_eye),
        eye_width=face.eye_width * factor,
        mouth=point(face.mouth),
        mouth_width=face.mouth_width * factor,
        method=face.method,
    )
