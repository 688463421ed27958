"""A portrait that talks: each frame is the still portrait with the face redrawn (the mouth
opened to the shape of the moment, the lower face stretched as the jaw drops, the lids lowered
on blinks) and the head moved by a few pixels, blended back into the still background by a
soft mask around the head. Outside that mask every frame is the portrait itself.

Only the region around the face is touched per frame (numpy on a few hundred thousand pixels,
and Pillow's affine warp), so a 512x512 frame takes a few milliseconds. The mouth is drawn
from the shared mouth model (`visemes.MOUTH` through `FaceTrack.open`/`wide`) at the face's
landmarks, like the pages' canvas face."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from service.domain.faces import FaceLandmarks
from service.domain.visemes import opening_size
from service.generators.face_track import FaceTrack

_INSIDE = np.array([52, 18, 24], np.float32)  # the open mouth's dark interior
_TEETH = np.array([236, 232, 222], np.float32)
_LASH = np.array([40, 28, 26], np.float32)


def _box(face: FaceLandmarks, width: int, height: int) -> tuple[int, int, int, int]:
    """The region redrawn per frame: the face, the hair above it (the face's box starts at the
    hairline) and a margin for the head's motion."""
    mx, above, below = face.width * 0.4, face.height * 0.55, face.height * 0.4
    x0, y0 = max(0, int(face.left - mx)), max(0, int(face.top - above))
    x1 = min(width, math.ceil(face.left + face.width + mx))
    y1 = min(height, math.ceil(face.top + face.height + below))
    return x0, y0, x1, y1


def _patch_colour(pixels: np.ndarray, x: float, y: float, radius: int) -> np.ndarray:
    h, w = pixels.shape[:2]
    xi, yi = int(np.clip(x, 0, w - 1)), int(np.clip(y, 0, h - 1))
    patch = pixels[max(0, yi - radius) : yi + radius + 1, max(0, xi - radius) : xi + radius + 1]
    return np.median(patch.reshape(-1, 3), axis=0).astype(np.float32)


class TalkingFace:
    """Draws the frames of one portrait (an (h, w, 3) uint8 RGB array) whose face is `face`."""

    def __init__(self, portrait: np.ndarray, face: FaceLandmarks) -> None:
        self._still = np.ascontiguousarray(portrait)
        h, w = portrait.shape[:2]
        self._face = face
        self._x0, self._y0, self._x1, self._y1 = _box(face, w, h)
        if self._x1 - self._x0 < 2 or self._y1 - self._y0 < 2:
            raise ValueError(f"the face's box {face.left:g},{face.top:g} is outside the image")
        self._region = self._still[self._y0 : self._y1, self._x0 : self._x1].astype(np.float32)
        self._mask = self._head_mask()
        r, c = (
            np.nonzero(self._mask[..., 0].max(axis=1))[0],
            np.nonzero(self._mask[..., 0].max(axis=0))[0],
        )
        self._blend = (slice(r[0], r[-1] + 1), slice(c[0], c[-1] + 1))
        cheek_y = (face.left_eye.y + face.mouth.y) / 2
        self._skin = np.mean(
            [_patch_colour(portrait, p.x, cheek_y, 3) for p in (face.left_eye, face.right_eye)],
            axis=0,
        )
        # The lips' colour from the skin's, darker and redder: sampled at the mouth it would be
        # whatever the photo shows between the lips (teeth, on a smile).
        self._lips = self._skin * np.array([0.78, 0.55, 0.58], np.float32)
        self._jaw = self._jaw_profile()

    def _head_mask(self) -> np.ndarray:
        """1 over the head (hair included: what moves with it must not be left behind as a
        double image), falling to 0 over a soft edge before the region's border."""
        f = self._face
        ys, xs = np.mgrid[self._y0 : self._y1, self._x0 : self._x1].astype(np.float32)
        cx, cy = f.left + f.width / 2, f.top + f.height * 0.42
        rx, ry = f.width * 0.62, f.height * 0.72
        distance = np.hypot((xs - cx) / rx, (ys - cy) / ry)
        return np.clip((1.25 - distance) / 0.25, 0, 1)[..., None].astype(np.float32)

    def frame(self, track: FaceTrack, i: int) -> np.ndarray:
        """Frame `i` of `track` as a new (h, w, 3) uint8 array."""
        face = self._region.copy()
        if track.open[i] > 0.01:
            face = self._drop_jaw(face, float(track.open[i]))
        self._draw_mouth(face, float(track.open[i]), float(track.wide[i]), float(track.smile[i]))
        if track.blink[i] > 0.01:
            for eye in (self._face.left_eye, self._face.right_eye):
                self._draw_lid(face, eye.x, eye.y, float(track.blink[i]))
        moved = self._move(face, float(track.dx[i]), float(track.dy[i]), float(track.angle[i]))
        out = self._still.copy()
        rows, cols = self._blend  # where the mask is not zero; elsewhere the still shows
        still, mask = self._region[rows, cols], self._mask[rows, cols]
        blended = still + mask * (moved[rows, cols] - still)
        out[self._y0 : self._y1, self._x0 : self._x1][rows, cols] = np.clip(blended + 0.5, 0, 255)
        return out

    def _jaw_profile(self) -> tuple[slice, slice, np.ndarray]:
        """Where the jaw's drop moves pixels (rows, columns of the region) and how far, per
        pixel of drop: most under the lips, nothing at the sides, the neck or above the mouth.
        It depends only on the face, so it is made once."""
        f = self._face
        chin = f.top + f.height
        span = max(chin - f.mouth.y, 1.0)
        y = np.arange(self._y0, self._y1, dtype=np.float32)
        x = np.arange(self._x0, self._x1, dtype=np.float32)
        rows = np.clip((y - f.mouth.y) / (0.3 * span), 0, 1)
        rows *= np.clip((chin + 0.35 * span - y) / (0.35 * span), 0, 1)
        across = np.clip(1 - np.abs(x - f.mouth.x) / (0.45 * f.width), 0, 1)
        cols = np.sin(across * np.pi / 2) ** 2
        r, c = np.nonzero(rows)[0], np.nonzero(cols)[0]
        if not len(r) or not len(c):
            return slice(0, 0), slice(0, 0), np.zeros((0, 0), np.float32)
        r_span, c_span = slice(r[0], r[-1] + 1), slice(c[0], c[-1] + 1)
        return r_span, c_span, np.outer(rows[r_span], cols[c_span]).astype(np.float32)

    def _drop_jaw(self, face: np.ndarray, open_: float) -> np.ndarray:
        """The lower face stretched down by the jaw's drop: its rows come from higher up."""
        rows, cols, profile = self._jaw
        if not profile.size:
            return face
        shift = open_ * 0.16 * self._face.mouth_width * profile
        where = np.arange(rows.start, rows.stop, dtype=np.float32)[:, None]
        source = np.clip(where - shift, 0, face.shape[0] - 1)
        lo = np.floor(source).astype(np.intp)
        hi, t = np.minimum(lo + 1, face.shape[0] - 1), (source - lo)[..., None]
        index = np.arange(cols.start, cols.stop)[None, :]
        face[rows, cols] = face[lo, index] * (1 - t) + face[hi, index] * t
        return face

    def _draw_mouth(self, face: np.ndarray, open_: float, wide: float, smile: float) -> None:
        """The opening: a dark ellipse (teeth along its top) ringed by lip colour, its height
        from `open`, its width from `wide`; a smile lifts its corners."""
        f = self._face
        width, height, lip = opening_size(open_, wide, f.mouth_width)
        half_w, half_h = width / 2, height / 2
        if half_h < 0.6 and smile < 0.01:
            return  # closed: the portrait's own lips show
        half_h = max(half_h, 0.6)
        cx, cy = f.mouth.x - self._x0, f.mouth.y - self._y0 + half_h * 0.4
        lip = max(1.2, lip)
        x0, x1 = int(cx - half_w - lip - 2), int(cx + half_w + lip + 3)
        y0, y1 = int(cy - half_h - lip - 2 - smile * 0.2 * half_w), int(cy + half_h + lip + 3)
        x0, y0 = max(0, x0), max(0, y0)
        x1, y1 = min(face.shape[1], x1), min(face.shape[0], y1)
        if x1 <= x0 or y1 <= y0:
            return
        ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
        u = (xs - cx) / half_w
        v = (ys - cy + smile * 0.2 * half_w * u * u) / half_h  # corners lifted on a smile
        distance = (np.hypot(u, v) - 1) * min(half_w, half_h)  # ~pixels outside the edge
        inside = np.clip(0.5 - distance, 0, 1)[..., None]
        rim = np.clip(0.5 - np.abs(distance - lip / 2) + lip / 2, 0, 1)[..., None]
        teeth = ((v < -0.35) & (open_ > 0.3))[..., None]
        fill = np.where(teeth, _TEETH, _INSIDE)
        patch = face[y0:y1, x0:x1]
        patch += rim * (1 - inside) * (self._lips - patch)
        patch += inside * (fill - patch)

    def _draw_lid(self, face: np.ndarray, x: float, y: float, closed: float) -> None:
        """An upper lid in skin colour lowered over the eye to `closed` (0 open, 1 shut)."""
        half_w = self._face.eye_width * 0.62
        half_h = self._face.eye_width * 0.38
        cx, cy = x - self._x0, y - self._y0
        x0, x1 = max(0, int(cx - half_w - 2)), min(face.shape[1], int(cx + half_w + 3))
        y0, y1 = max(0, int(cy - half_h - 2)), min(face.shape[0], int(cy + half_h + 3))
        if x1 <= x0 or y1 <= y0:
            return
        ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
        # Where the lid's rim is: shut, it lies below the eye's middle, where the eye is still
        # wide enough for the lashes to show.
        edge = cy - half_h + 1.8 * half_h * closed
        within = np.clip((1 - np.hypot((xs - cx) / half_w, (ys - cy) / half_h)) * half_h, 0, 1)
        above = np.clip(edge - ys + 0.5, 0, 1)
        lid = (within * above)[..., None]
        lash = (within * np.clip(1.2 - np.abs(ys - edge), 0, 1) * (closed > 0.4))[..., None]
        patch = face[y0:y1, x0:x1]
        patch += lid * (self._skin - patch)
        patch += lash * (_LASH - patch)

    def _move(self, face: np.ndarray, dx: float, dy: float, angle: float) -> np.ndarray:
        """The redrawn region turned by `angle` degrees about the chin and shifted by (dx,
        dy) face heights. What comes in from beyond the region's border is black, where the
        mask is zero."""
        if abs(dx) < 1e-4 and abs(dy) < 1e-4 and abs(angle) < 1e-3:
            return face
        f = self._face
        # A point p goes to R (p - P) + P + T; Pillow wants each output pixel's source, the
        # inverse: p = R^-1 (q - P - T) + P.
        px, py = f.left + f.width / 2 - self._x0, f.top + f.height - self._y0
        qx, qy = px + dx * f.height, py + dy * f.height
        c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        coeffs = (c, s, px - c * qx - s * qy, -s, c, py + s * qx - c * qy)
        image = Image.fromarray(np.clip(face + 0.5, 0, 255).astype(np.uint8))
        size = (face.shape[1], face.shape[0])
        moved = image.transform(size, Image.Transform.AFFINE, coeffs, Image.Resampling.BILINEAR)
        return np.asarray(moved, np.float32)
