"""Portraits of the built-in generator with their face landmarks, computed from the geometry it
draws with (`service.generators.head`), and a `FaceFinder` that knows them: the talking-video
tests need faces whose eyes and mouth are exactly where the landmarks say."""

from __future__ import annotations

import io

from PIL import Image

from service.domain.faces import FaceLandmarks, Point
from service.generators.head import head_of
from service.generators.procedural import portrait
from service.generators.traits import traits_of


def generated_face(prompt: str, seed: int, width: int, height: int) -> FaceLandmarks:
    head = head_of(traits_of(prompt, seed))
    scale = min(width, height)

    def px(x: float, y: float) -> Point:  # figure units -> pixels (see sdf.Canvas)
        return Point(x * scale + width / 2 - 0.5, y * scale + (height - scale) - 0.5)

    top_left = px(-head.fw, head.cy - head.fh)
    bottom = px(0, head.chin_y)
    return FaceLandmarks(
        left=top_left.x,
        top=top_left.y,
        width=2 * head.fw * scale,
        height=bottom.y - top_left.y,
        left_eye=px(-head.eye_x, head.eye_y),
        right_eye=px(head.eye_x, head.eye_y),
        eye_width=0.4 * head.fw * scale,
        mouth=px(0, head.mouth_y),
        mouth_width=0.4 * head.fw * scale,
        method="generator",
    )


def generated_png(prompt: str, seed: int, width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(portrait(traits_of(prompt, seed), width, height)).save(out, format="PNG")
    return out.getvalue()


class KnownFaces:
    """A `FaceFinder` for images whose faces are known (by their exact bytes); any other image
    has none."""

    def __init__(self) -> None:
        self._faces: dict[bytes, list[FaceLandmarks]] = {}

    def add(self, png: bytes, face: FaceLandmarks) -> bytes:
        self._faces[png] = [face]
        return png

    def find(self, image: bytes) -> list[FaceLandmarks]:
        return list(self._faces.get(image, []))
