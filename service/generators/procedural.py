"""The built-in avatar generator: a stylised head-and-shoulders portrait drawn from signed
distances with numpy, its look decided by the prompt and seed (see `traits`).

The same prompt, seed and size give the same PNG bytes: the traits come from a hash, the
drawing uses only exactly rounded arithmetic (see `sdf`), and the PNG is written with fixed
settings and no metadata."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from service.domain.faces import FaceLandmarks
from service.generators.head import Head, hair_shapes, head_of
from service.generators.portrait_face import portrait_face
from service.generators.sdf import (
    F32,
    Canvas,
    Shape,
    above,
    arc,
    bands,
    below,
    capsule,
    circle,
    ellipse,
    rounded_box,
    smooth_union,
    vee,
    vertical_gradient,
)
from service.generators.traits import Traits, mix, shade, traits_of

WHITE = (1.0, 1.0, 1.0)
INK = (0.13, 0.1, 0.1)
GOLD = (0.93, 0.74, 0.3)
# zlib level 6 (Pillow's default, named so it cannot drift) without the slow optimize pass.
PNG_SETTINGS = {"compress_level": 6, "optimize": False}


class ProceduralPortraits:
    """`Generator` (see `service.domain.generation`) drawing portraits without a model."""

    def render(self, prompt: str, width: int, height: int, seed: int) -> bytes:
        if width < 1 or height < 1:
            raise ValueError(f"the image must be at least 1x1 pixels, not {width}x{height}")
        pixels = portrait(traits_of(prompt, seed), width, height)
        out = io.BytesIO()
        Image.fromarray(pixels, "RGB").save(out, format="PNG", **PNG_SETTINGS)
        return out.getvalue()

    def face(self, prompt: str, width: int, height: int, seed: int) -> FaceLandmarks:
        return portrait_face(traits_of(prompt, seed), width, height)


def portrait(traits: Traits, width: int, height: int) -> np.ndarray:
    """The portrait as a (height, width, 3) uint8 array."""
    sky = traits.sky
    canvas = Canvas(
        width, height, vertical_gradient(mix(sky, WHITE, 0.25), shade(sky, 0.88), -0.2, 1)
    )
    head = head_of(traits)
    hair = hair_shapes(head, traits)
    _backdrop(canvas, traits, head)
    canvas.fill(hair.back, shade(traits.hair, 0.85))
    _body(canvas, traits, head)
    canvas.fill(hair.shoulders, shade(traits.hair, 0.92))
    _ears(canvas, traits, head)
    _face(canvas, traits, head)
    _features(canvas, traits, head)
    if traits.beard:
        _beard(canvas, traits, head)
    _mouth(canvas, traits, head)
    _hair(canvas, traits, head, hair.front)
    if traits.earrings:
        for side in (-1, 1):
            canvas.fill(
                circle((side * head.fw * 0.98, head.cy + head.fh * 0.42), head.fw * 0.06), GOLD
            )
    if traits.glasses:
        _glasses(canvas, traits, head)
    if traits.hat:
        _hat(canvas, traits, head)
    return canvas.to_uint8()


def _backdrop(canvas: Canvas, traits: Traits, head: Head) -> None:
    accent, cy = traits.accent, F32(head.cy)
    if traits.backdrop == "rings":  # centred on the head
        ripples = bands(lambda x, y: np.sqrt(x * x + (y - cy) * (y - cy)), 0.09, 0.35)
        canvas.fill(Shape(ripples), accent, opacity=0.45)
    elif traits.backdrop == "stripes":
        canvas.fill(Shape(bands(lambda x, y: x * F32(0.7) + y * F32(0.7), 0.08, 0.4)), accent, 0.4)
    elif traits.backdrop == "dots":

        def dots(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            u, v = x / F32(0.07), y / F32(0.07)
            du, dv = u - np.floor(u) - F32(0.5), v - np.floor(v) - F32(0.5)
            return (np.sqrt(du * du + dv * dv) - F32(0.16)) * F32(0.07)

        canvas.fill(Shape(dots), accent, opacity=0.5)
    elif traits.backdrop == "bubbles":
        draw = traits.rng
        for _ in range(7):
            c = (draw.between(-0.7, 0.7), draw.between(-0.3, 0.9))
            canvas.fill(circle(c, draw.between(0.04, 0.16)), accent, draw.between(0.25, 0.5))
    canvas.glow((0, head.cy), 0.55, WHITE, 0.35)


def _body(canvas: Canvas, traits: Traits, head: Head) -> None:
    fw, skin, shirt = head.fw, traits.skin, traits.shirt
    neck = rounded_box((0, head.chin_y + 0.02), (fw * 0.42, 0.12), fw * 0.2)
    canvas.fill(neck, shade(skin, 0.92))
    canvas.fill(head.shape.moved(0, fw * 0.15), shade(skin, 0.72), 0.5, within=neck)
    shoulders = ellipse((0, 0.9), (0.43, 0.17))
    body = smooth_union(shoulders, rounded_box((0, 1.2), (0.43, 0.3), 0.05), 0.05)
    canvas.fill(body, vertical_gradient(shirt, shade(shirt, 0.78), 0.75, 1.05))
    collar_y = head.chin_y + 0.09
    if traits.neckline in ("vee", "collar"):
        if traits.neckline == "collar":  # a white shirt showing along the V
            canvas.fill(vee((0, collar_y + 0.14), 1.6) & body, mix(WHITE, shirt, 0.08))
        canvas.fill(vee((0, collar_y + 0.1), 1.6) & body, shade(skin, 0.92))
    elif traits.neckline == "crew":
        canvas.fill(arc((0, collar_y - 0.06), 0.085, 0.5, 0.012), shade(shirt, 0.8))
    else:  # turtleneck
        canvas.fill(rounded_box((0, collar_y - 0.01), (fw * 0.55, 0.05), 0.03), shade(shirt, 0.9))


def _ears(canvas: Canvas, traits: Traits, head: Head) -> None:
    for side in (-1, 1):
        c = (side * head.fw * 0.97, head.cy + head.fh * 0.1)
        canvas.fill(ellipse(c, (head.fw * 0.2, head.fw * 0.3)), shade(traits.skin, 0.95))
        inner = ellipse((c[0] + side * head.fw * 0.03, c[1]), (head.fw * 0.09, head.fw * 0.17))
        canvas.fill(inner, shade(traits.skin, 0.82), 0.6)


def _face(canvas: Canvas, traits: Traits, head: Head) -> None:
    fw, fh, skin = head.fw, head.fh, traits.skin
    canvas.fill(head.shape, skin)
    light = ellipse((-fw * 0.2, head.cy - fh * 0.15), (fw * 0.7, fh * 0.75))
    canvas.fill(light, mix(skin, WHITE, 0.35), 0.25, soften=fw * 0.5, within=head.shape)
    blush = mix(skin, (0.95, 0.45, 0.5), 0.6)
    for side in (-1, 1):
        cheek = circle((side * fw * 0.55, head.cy + fh * 0.45), fw * 0.16)
        canvas.fill(cheek, blush, traits.blush, soften=fw * 0.18)
    if traits.freckles:
        draw = traits.rng
        for _ in range(14):
            side = -1 if draw.chance(0.5) else 1
            x, y = side * draw.between(0.25, 0.75) * fw, head.cy + fh * draw.between(0.3, 0.5)
            canvas.fill(circle((x, y), fw * 0.018), shade(skin, 0.72), 0.7)
    nose = arc((0, head.cy + fh * 0.34), fw * 0.13, 0.35, fw * 0.022)
    canvas.fill(nose, shade(skin, 0.75), 0.8)


def _features(canvas: Canvas, traits: Traits, head: Head) -> None:
    fw = head.fw
    brow = shade(traits.hair, 0.6) if sum(traits.hair) < 2.2 else (0.45, 0.35, 0.28)
    for side in (-1, 1):
        ex, ey = side * head.eye_x, head.eye_y
        tilt = traits.brow_tilt * side
        inner, outer = (
            (ex - side * fw * 0.16, ey - fw * 0.3),
            (ex + side * fw * 0.17, ey - fw * 0.31),
        )
        canvas.fill(capsule((inner[0], inner[1] + tilt), outer, fw * 0.035), brow)
        _eye(canvas, traits, (ex, ey), fw)


def _eye(canvas: Canvas, traits: Traits, c: tuple[float, float], fw: float) -> None:
    x, y = c
    if traits.eye_style == "happy":
        canvas.fill(arc((x, y + fw * 0.05), fw * 0.12, 0.55, fw * 0.028, down=False), INK)
        return
    if traits.eye_style == "dot":
        canvas.fill(ellipse(c, (fw * 0.075, fw * 0.095)), INK)
        canvas.fill(circle((x - fw * 0.025, y - fw * 0.035), fw * 0.025), WHITE)
        return
    white = ellipse(c, (fw * 0.2, fw * 0.14))
    canvas.fill(white, (0.98, 0.97, 0.95))
    canvas.fill(circle(c, fw * 0.115), traits.eyes, within=white)
    canvas.fill(circle(c, fw * 0.055), INK, within=white)
    canvas.fill(circle((x - fw * 0.04, y - fw * 0.04), fw * 0.03), WHITE)
    canvas.fill(arc((x, y + fw * 0.14), fw * 0.25, 0.42, fw * 0.02, down=False), INK)


def _mouth(canvas: Canvas, traits: Traits, head: Head) -> None:
    fw, my = head.fw, head.mouth_y
    lips = shade(mix(traits.skin, (0.78, 0.25, 0.3), 0.55), 0.85)
    if traits.mouth == "smile":
        canvas.fill(arc((0, my - fw * 0.3), fw * 0.32, 0.35, fw * 0.025), lips)
    elif traits.mouth == "grin":
        opening = circle((0, my - fw * 0.22), fw * 0.4) & below(my - fw * 0.1)
        canvas.fill(opening, (0.32, 0.08, 0.1))
        teeth = rounded_box((0, my - fw * 0.07), (fw * 0.4, fw * 0.035), 0.0)
        canvas.fill(teeth, WHITE, within=opening)
        canvas.fill(circle((0, my + fw * 0.21), fw * 0.13), (0.88, 0.42, 0.48), within=opening)
    elif traits.mouth == "neutral":
        canvas.fill(capsule((-fw * 0.15, my), (fw * 0.15, my), fw * 0.025), lips)
    else:  # smirk
        canvas.fill(arc((fw * 0.1, my - fw * 0.4), fw * 0.42, 0.25, fw * 0.025), lips)


def _beard(canvas: Canvas, traits: Traits, head: Head) -> None:
    """Along the jaw, thickest at the chin, with a moustache above the mouth."""
    fw, fh, my = head.fw, head.fh, head.mouth_y
    cheeks = ellipse((0, head.cy + fh * 0.2), (fw * 0.82, fh * 0.55))
    jaw = (head.shape.grown(fw * 0.05) & below(head.cy + fh * 0.3)) - cheeks
    colour = shade(traits.hair, 0.92)
    canvas.fill(jaw - ellipse((0, my + fw * 0.02), (fw * 0.26, fw * 0.12)), colour)
    for side in (-1, 1):
        inner, outer = (side * fw * 0.05, my - fw * 0.13), (side * fw * 0.3, my - fw * 0.04)
        canvas.fill(capsule(inner, outer, fw * 0.065), colour)


def _hair(canvas: Canvas, traits: Traits, head: Head, front: Shape) -> None:
    fw, fh = head.fw, head.fh
    if traits.hair_style == "bald":  # light on the scalp
        shine = ellipse((-fw * 0.3, head.cy - fh * 0.7), (fw * 0.25, fh * 0.12))
        canvas.fill(shine, WHITE, 0.2, soften=fw * 0.15)
        return
    # A shadow on the forehead first, then the hair, then a sheen along its top.
    canvas.fill(front.moved(0, fw * 0.06), shade(traits.skin, 0.7), 0.35, within=head.shape)
    canvas.fill(front, traits.hair, 0.75 if traits.hair_style == "buzz" else 1.0)
    sheen = ellipse((-fw * 0.3, head.cy - fh * 0.8), (fw * 0.45, fh * 0.15))
    canvas.fill(sheen, mix(traits.hair, WHITE, 0.35), 0.35, soften=fw * 0.12, within=front)


def _glasses(canvas: Canvas, traits: Traits, head: Head) -> None:
    fw, ey = head.fw, head.eye_y
    frame = INK if traits.rng.chance(0.6) else shade(traits.shirt, 0.7)
    for side in (-1, 1):
        lens = circle((side * head.eye_x, ey), fw * 0.27)
        canvas.fill(lens, WHITE, 0.18)
        canvas.fill(lens.outline(fw * 0.025), frame)
        hinge, ear = (side * (head.eye_x + fw * 0.27), ey), (side * fw * 0.98, ey - fw * 0.04)
        canvas.fill(capsule(hinge, ear, fw * 0.022), frame)
    canvas.fill(arc((0, ey + fw * 0.05), fw * 0.17, 0.3, fw * 0.022, down=False), frame)


def _hat(canvas: Canvas, traits: Traits, head: Head) -> None:
    """A beanie with a turned-up band and a pompom."""
    fw, fh, band_y = head.fw, head.fh, head.cy - head.fh * 0.5
    dome = rounded_box((0, band_y - fh * 0.3), (fw * 1.15, fh * 0.55), fw * 0.9) & above(band_y)
    canvas.fill(dome, mix(traits.shirt, WHITE, 0.3))
    canvas.fill(
        rounded_box((0, band_y), (fw * 1.18, fh * 0.12), fh * 0.1), shade(traits.shirt, 0.8)
    )
    canvas.fill(circle((0, band_y - fh * 0.85), fw * 0.2), mix(traits.shirt, WHITE, 0.6))
