"""A photo turned into the portrait format the pages use: a square PORTRAIT_SIDE image with the
face upright (the eyes level), centred, its box FACE_SHARE of the width and the eyes at EYES_AT
of the height, as the generated portraits are framed; the face's points moved with it.

Where the frame reaches past the photo, the photo's own edge colour fills it (a crop never
stretches the face to fill the square)."""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image

from service.domain.faces import FaceLandmarks, Point

PORTRAIT_SIDE = 512
FACE_SHARE = 0.46  # the face box's width, of the portrait's
EYES_AT = 0.42  # the eyes' height, of the portrait's
# A tilt this small is left alone (a landmark's noise, not a tilted head); larger ones are
# corrected up to MAX_TILT_DEG (beyond it the eyes were misplaced: the box is trusted instead).
MIN_TILT_DEG, MAX_TILT_DEG = 1.0, 30.0


def _tilt(face: FaceLandmarks) -> float:
    """The angle (radians) that levels the eyes, 0 when small or implausible."""
    dx = face.right_eye.x - face.left_eye.x
    dy = face.right_eye.y - face.left_eye.y
    degrees = math.degrees(math.atan2(dy, dx))
    return math.radians(degrees) if MIN_TILT_DEG <= abs(degrees) <= MAX_TILT_DEG else 0.0


def _edge_colour(image: Image.Image) -> tuple[int, int, int]:
    pixels = np.asarray(image)
    edges = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    return tuple(int(v) for v in np.median(edges, axis=0))  # type: ignore[return-value]


def _scaled(face: FaceLandmarks, factor: float) -> FaceLandmarks:
    def point(p: Point) -> Point:
        return Point(p.x * factor, p.y * factor)

    return FaceLandmarks(
        left=face.left * factor, top=face.top * factor, width=face.width * factor,
        height=face.height * factor, left_eye=point(face.left_eye),
        right_eye=point(face.right_eye), eye_width=face.eye_width * factor,
        mouth=point(face.mouth), mouth_width=face.mouth_width * factor, method=face.method,
    )  # fmt: skip


def align(photo: Image.Image, face: FaceLandmarks) -> tuple[bytes, FaceLandmarks]:
    """The portrait (PNG) of `face` in `photo` (RGB), and the face's points in it."""
    scale = FACE_SHARE * PORTRAIT_SIDE / face.width
    if scale < 1:  # shrink first, with a filter that averages (the affine pass does not)
        size = (max(1, round(photo.width * scale)), max(1, round(photo.height * scale)))
        face = _scaled(face, size[0] / photo.width)
        photo = photo.resize(size, Image.Resampling.LANCZOS)
        scale = FACE_SHARE * PORTRAIT_SIDE / face.width
    angle = _tilt(face)
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    centre = Point(
        (face.left_eye.x + face.right_eye.x) / 2, (face.left_eye.y + face.right_eye.y) / 2
    )
    ox, oy = PORTRAIT_SIDE / 2, EYES_AT * PORTRAIT_SIDE
    # Output pixel (X, Y) samples the photo at centre + R(angle) (X - ox, Y - oy) / scale.
    a, b, d, e = cos, -sin, sin, cos
    matrix = (a, b, centre.x - a * ox - b * oy, d, e, centre.y - d * ox - e * oy)
    portrait = photo.transform(
        (PORTRAIT_SIDE, PORTRAIT_SIDE),
        Image.Transform.AFFINE,
        matrix,
        resample=Image.Resampling.BICUBIC,
        fillcolor=_edge_colour(photo),
    )
    out = io.BytesIO()
    portrait.save(out, format="PNG")
    return out.getvalue(), _moved(face, centre, angle, scale, Point(ox, oy))


def _moved(
    face: FaceLandmarks, centre: Point, angle: float, scale: float, origin: Point
) -> FaceLandmarks:
    """`face`'s points in the portrait: origin + scale R(-angle) (p - centre)."""
    cos, sin = math.cos(angle), math.sin(angle)

    def point(p: Point) -> Point:
        x, y = p.x - centre.x, p.y - centre.y
        return Point(
            round(origin.x + scale * (cos * x + sin * y), 2),
            round(origin.y + scale * (-sin * x + cos * y), 2),
        )

    box_centre = point(Point(face.left + face.width / 2, face.top + face.height / 2))
    width, height = face.width * scale, face.height * scale
    return FaceLandmarks(
        left=round(box_centre.x - width / 2, 2), top=round(box_centre.y - height / 2, 2),
        width=round(width, 2), height=round(height, 2), left_eye=point(face.left_eye),
        right_eye=point(face.right_eye), eye_width=round(face.eye_width * scale, 2),
        mouth=point(face.mouth), mouth_width=round(face.mouth_width * scale, 2),
        method=face.method,
    )  # fmt: skip
