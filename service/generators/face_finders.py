"""A process's face finder: mediapipe's face mesh when the `faces` extra is installed, else
scikit-image's cascade (service.generators.face_box says why that is the built-in). Either is
loaded on the first image, so processes that never look at one (most of them) do not pay for
importing it."""

from __future__ import annotations

import importlib.util
import threading

from service.domain.faces import FaceFinder, FaceLandmarks


def mesh_available() -> bool:
    return importlib.util.find_spec("mediapipe") is not None


def _load() -> FaceFinder:
    if mesh_available():
        from service.generators.face_mesh import MeshFaces

        return MeshFaces()
    from service.generators.face_box import CascadeFaces

    return CascadeFaces()


class LoadedOnUse:
    """`FaceFinder` that loads the process's finder on its first call."""

    def __init__(self) -> None:
        self._finder: FaceFinder | None = None
        self._lock = threading.Lock()

    def find(self, image: bytes) -> list[FaceLandmarks]:
        with self._lock:
            if self._finder is None:
                self._finder = _load()
        return self._finder.find(image)


def face_finder() -> FaceFinder:
    return LoadedOnUse()
