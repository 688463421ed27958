"""Where the procedural portrait draws its face, as the face landmarks of the image (method
"generator"): the drawing's own geometry (`head.Head`) in pixels, so no finder is needed."""

from __future__ import annotations

from service.domain.faces import FaceLandmarks, Point
from service.generators.head import head_of
from service.generators.sdf import to_pixels
from service.generators.traits import Traits

# Each mouth style's width corner to corner, in face half-widths (procedural._mouth draws them).
MOUTH_WIDTHS = {"smile": 0.6, "grin": 0.78, "neutral": 0.35, "smirk": 0.55}
# The white of a round eye is 0.4 face half-widths across (procedural._eye).
EYE_WIDTH = 0.4
# The hairline, above the eyes, in skull half-heights from the skull's centre.
HAIRLINE = 0.75


def portrait_face(traits: Traits, width: int, height: int) -> FaceLandmarks:
    head = head_of(traits)
    scale = min(width, height)

    def point(x: float, y: float) -> Point:
        return Point(*to_pixels(x, y, width, height))

    corner = point(-head.fw, head.cy - head.fh * HAIRLINE)
    chin = point(head.fw, head.chin_y)
    return FaceLandmarks(
        left=corner.x,
        top=corner.y,
        width=chin.x - corner.x,
        height=chin.y - corner.y,
        left_eye=point(-head.eye_x, head.eye_y),
        right_eye=point(head.eye_x, head.eye_y),
        eye_width=head.fw * EYE_WIDTH * scale,
        mouth=point(0, head.mouth_y),
        mouth_width=head.fw * MOUTH_WIDTHS[traits.mouth] * scale,
        method="generator",
    )
