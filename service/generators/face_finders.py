"""A process's face finder: mediapipe's face mesh when the `faces` extra is installed, else
scikit-image's cascade (service.generators.face_box says why that is the built-in)."""

from __future__ import annotations

from service.domain.faces import FaceFinder
from service.generators.face_box import CascadeFaces
from service.generators.face_mesh import MeshFaces, mesh_available


def face_finder() -> FaceFinder:
    return MeshFaces() if mesh_available() else CascadeFaces()
