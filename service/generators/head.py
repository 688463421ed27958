"""The geometry of a portrait's head, and its hair styles as shapes.

Each hair style is up to three shapes: what lies behind the head and body, what falls over the
shoulders, and what lies on the head in front of the face. Sizes are in figure units (see
`sdf.Canvas`) and scale with the face, so every style fits every face shape."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.generators.sdf import (
    Shape,
    above,
    below,
    circle,
    ellipse,
    rounded_box,
    smooth_union,
    unit_vector,
)
from service.generators.traits import Traits

NOTHING = Shape(lambda x, y: x * 0 + y * 0 + 1, (np.inf, np.inf, -np.inf, -np.inf))


@dataclass(frozen=True)
class Hair:
    back: Shape  # behind the head and body
    shoulders: Shape  # over the shoulders, in front of the body
    front: Shape  # on the head, in front of the face


@dataclass(frozen=True)
class Head:
    cy: float  # the centre of the skull; the head is centred on x = 0
    fw: float  # half-width of the face
    fh: float  # half-height of the skull
    shape: Shape

    @property
    def eye_y(self) -> float:
        return self.cy + self.fh * 0.12

    @property
    def eye_x(self) -> float:
        return self.fw * 0.42

    @property
    def mouth_y(self) -> float:
        return self.cy + self.fh * 0.7

    @property
    def chin_y(self) -> float:
        return self.cy + self.fh * 1.08


def head_of(traits: Traits) -> Head:
    fw, fh, cy = traits.face_width, traits.face_height, 0.41
    skull = ellipse((0, cy), (fw, fh))
    jaw = ellipse((0, cy + fh * 0.3), (fw * traits.jaw, fh * 0.78))
    return Head(cy, fw, fh, smooth_union(skull, jaw, fw * 0.25))


def _face_window(head: Head, traits: Traits) -> Shape:
    """Where the fringe stops: the face below the hairline, parted to one side."""
    return ellipse(
        (traits.part * head.fw * 0.2, head.cy + head.fh * 0.55), (head.fw, head.fh * 1.02)
    )


def _cap(head: Head) -> Shape:
    """The hair lying on the skull, a little fuller on top."""
    crown = ellipse((0, head.cy - head.fh * 0.08), (head.fw * 1.1, head.fh * 0.98))
    return smooth_union(head.shape.grown(head.fw * 0.1), crown, head.fw * 0.2)


def _curls(head: Head, scale: float, count: int, radius: float) -> Shape:
    """Circles along the upper rim of an ellipse around the head: a curly outline."""
    shape = ellipse((0, head.cy - head.fh * 0.1), (head.fw * scale, head.fh * scale * 0.9))
    for i in range(count):
        t = -2.2 + 4.4 * i / (count - 1)  # tangent of half the angle: from lower left to right
        dx, dy = unit_vector(t)
        # Angles measured from the top (-y): rotate the rational direction a quarter turn.
        x, y = dy * head.fw * scale, -dx * head.fh * scale * 0.9
        shape = shape | circle((x, head.cy - head.fh * 0.1 + y), radius)
    return shape


def hair_shapes(head: Head, traits: Traits) -> Hair:
    """The traits' hair style as shapes."""
    fw, fh, cy = head.fw, head.fh, head.cy
    style, window, cap = traits.hair_style, _face_window(head, traits), _cap(head)
    fringe = (cap & above(cy + fh * 0.2)) - window
    if style == "short":
        return Hair(NOTHING, NOTHING, fringe)
    if style == "bob":
        back = rounded_box((0, cy + fh * 0.2), (fw * 1.25, fh * 1.05), fw * 0.7) | cap
        return Hair(back, NOTHING, (cap.grown(fw * 0.12) & above(cy + fh * 0.75)) - window)
    if style == "long":
        back = rounded_box((0, cy + fh * 0.9), (fw * 1.35, fh * 1.75), fw * 0.9) | cap
        # Either side of the neck it falls over the shoulders.
        neck = rounded_box((0, cy + fh * 2.4), (fw * 0.75, fh * 1.9), fw * 0.4)
        sides = (cap.grown(fw * 0.12) & above(cy + fh * 0.5)) - window
        return Hair(back, (back & below(cy)) - neck, sides)
    if style == "bun":
        return Hair(circle((0, cy - fh * 1.1), fw * 0.45), NOTHING, fringe)
    if style == "curly":
        curls = _curls(head, 1.0, 9, fw * 0.2) & above(cy - fh * 0.25)
        front = (curls | fringe) - window.moved(0, fh * 0.08)
        return Hair(_curls(head, 1.45, 13, fw * 0.3), NOTHING, front)
    if style == "buzz":
        return Hair(NOTHING, NOTHING, (head.shape.grown(fw * 0.03) & above(cy - fh * 0.1)) - window)
    if style == "swept":
        side = 1 if traits.part >= 0 else -1
        sweep = ellipse((side * fw * 0.45, cy - fh * 0.42), (fw * 0.75, fh * 0.28))
        return Hair(NOTHING, NOTHING, fringe | (sweep & cap))
    return Hair(NOTHING, NOTHING, NOTHING)  # bald
