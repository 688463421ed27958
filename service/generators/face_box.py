"""The built-in face finder: scikit-image's LBP frontal-face cascade (the file ships in its
wheel, so nothing is downloaded) finds each face's box; the eyes and mouth are placed at a
frontal face's proportions inside it, then moved to the darkest spot (the iris) and the
darkest line (between the lips) near where the proportions put them.

Why this and not a landmark model by default: the only landmark model that runs offline from a
wheel (mediapipe's face mesh, `face_mesh`) pulls OpenCV, JAX and matplotlib, some 600 MB
installed; the cascade is a 50 kB file in scikit-image's wheel (with SciPy, some 150 MB), and a
talking portrait needs only where the eyes and the mouth are. With the `faces` extra installed
the face mesh is used instead (`face_finders`)."""

from __future__ import annotations

import threading

import numpy as np
from skimage import data, feature, filters
from skimage.color import rgb2gray

from service.domain.faces import FaceLandmarks, Point
from service.generators.face_image import decode_rgb, scaled

# A face smaller than this part of the image's short side is not looked for.
MIN_FACE = 1 / 10
# Detection windows that agree before a box counts as a face: 8 keeps scikit-image's sample
# photographs without a person (a cat, cells, a retina) free of faces, and finds the astronaut.
AGREEING = 8
# Where the points lie in the cascade's box (the box spans brows to below the lips), as
# fractions of its width and height: measured on frontal faces by a landmark model.
EYE_X, EYE_Y, EYE_WIDTH = 0.3, 0.36, 0.2
MOUTH_Y, MOUTH_WIDTH = 0.8, 0.42
# How far (fractions of the box) a point may move from its proportional place when refined.
EYE_REACH_X, EYE_REACH_Y, MOUTH_REACH = 0.1, 0.07, 0.08
# The face's box, hairline to chin, from the cascade's (brows to below the lips).
ABOVE, BELOW = 0.15, 0.15


class CascadeFaces:
    """`FaceFinder` (service.domain.faces): boxes from the cascade, method "box"."""

    def __init__(self) -> None:
        self._cascade = feature.Cascade(data.lbp_frontal_face_cascade_filename())
        # The cascade keeps scratch state between calls: one detection at a time.
        self._lock = threading.Lock()

    def find(self, image: bytes) -> list[FaceLandmarks]:
        rgb, factor = decode_rgb(image)
        boxes = self._boxes(rgb)
        gray = rgb2gray(rgb)
        faces = [_placed(gray, *box) for box in boxes]
        return [scaled(face, factor) for face in faces]

    def _boxes(self, rgb: np.ndarray) -> list[tuple[int, int, int]]:
        """(left, top, side) of each face, largest first."""
        short = min(rgb.shape[:2])
        smallest = max(24, round(short * MIN_FACE))
        if short < smallest:
            return []
        with self._lock:
            found = self._cascade.detect_multi_scale(
                img=rgb,
                scale_factor=1.2,
                step_ratio=1,
                min_size=(smallest, smallest),
                max_size=(short, short),
                min_neighbor_number=AGREEING,
            )
        boxes = [(d["c"], d["r"], d["width"]) for d in found]
        return sorted(boxes, key=lambda box: -box[2])


def _window(gray: np.ndarray, x0: float, y0: float, x1: float, y1: float):
    """The part of `gray` in a box, clipped to the image (at least one pixel unless the box
    lies outside it), and its top left corner."""
    h, w = gray.shape
    c0, c1 = int(max(0, x0)), int(min(w, max(x1, x0 + 1)))
    r0, r1 = int(max(0, y0)), int(min(h, max(y1, y0 + 1)))
    return gray[r0:r1, c0:c1], c0, r0


def _darkest(gray: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    """The darkest point of a box of a blurred `gray` (the box's centre if it is empty)."""
    window, c0, r0 = _window(gray, x0, y0, x1, y1)
    if window.size == 0:
        return (x0 + x1) / 2, (y0 + y1) / 2
    r, c = np.unravel_index(np.argmin(window), window.shape)
    return float(c0 + c + 0.5), float(r0 + r + 0.5)


def _darkest_row(gray: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> float:
    """The y of the darkest row of a box (the line between the lips is dark across)."""
    window, _, r0 = _window(gray, x0, y0, x1, y1)
    if window.size == 0:
        return (y0 + y1) / 2
    return float(r0 + int(np.argmin(window.mean(axis=1))) + 0.5)


def _placed(gray: np.ndarray, left: int, top: int, side: int) -> FaceLandmarks:
    """The points of the face whose cascade box is (left, top, side)."""
    smooth = filters.gaussian(gray, sigma=max(1.0, side / 50))
    eyes = []
    for fraction in (EYE_X, 1 - EYE_X):
        x, y = left + side * fraction, top + side * EYE_Y
        dx, dy = side * EYE_REACH_X, side * EYE_REACH_Y
        eyes.append(Point(*_darkest(smooth, x - dx, y - dy, x + dx, y + dy)))
    # A frontal face is symmetric: the mouth is centred below the eyes.
    mouth_x = (eyes[0].x + eyes[1].x) / 2
    half, reach = side * MOUTH_WIDTH / 2, side * MOUTH_REACH
    y = top + side * MOUTH_Y
    mouth_y = _darkest_row(smooth, mouth_x - half / 2, y - reach, mouth_x + half / 2, y + reach)
    return FaceLandmarks(
        left=float(left),
        top=top - side * ABOVE,
        width=float(side),
        height=side * (1 + ABOVE + BELOW),
        left_eye=eyes[0],
        right_eye=eyes[1],
        eye_width=side * EYE_WIDTH,
        mouth=Point(mouth_x, mouth_y),
        mouth_width=side * MOUTH_WIDTH,
        method="box",
    )
