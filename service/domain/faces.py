"""Where the face is in an avatar's portrait: the few points a talking face needs (the face's
box, both eyes and the mouth), found once when the avatar is stored and kept with it. The pages'
canvas and the talking-video renderer both draw from these, so a mouth opens at the same place
wherever it is shown.

Coordinates are pixels of the stored image, origin at its top left, x to the right and y down.
`method` says how the points were found: `generator` (the portrait generator knows where it drew
them), `landmarks` (a landmark model placed each point), `box` (only the face's box was found and
the points are placed at the usual proportions of a frontal face inside it)."""

from __future__ import annotations

from typing import Literal, Protocol

import msgspec

FaceMethod = Literal["generator", "landmarks", "box"]


class Point(msgspec.Struct, frozen=True, array_like=True):
    x: float
    y: float


class FaceLandmarks(msgspec.Struct, frozen=True):
    # The face's box: from the hairline to the chin, ear to ear.
    left: float
    top: float
    width: float
    height: float
    left_eye: Point  # centre of the eye on the image's left
    right_eye: Point
    eye_width: float  # one eye's width (the lids are drawn to it when blinking)
    mouth: Point  # centre of the closed lips
    mouth_width: float  # corner to corner
    method: FaceMethod


class FaceFinder(Protocol):
    """Finds the faces of an image (PNG, JPEG or WebP bytes), largest first; an image without a
    face gives an empty list. Blocking and CPU-bound: callers run it off the event loop."""

    def find(self, image: bytes) -> list[FaceLandmarks]: ...
