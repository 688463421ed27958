"""Face landmarks: the built-in cascade finder and the optional face mesh on a real face
(scikit-image's astronaut) and on images without one, and the portrait generator's own points.

The astronaut's reference points were placed by mediapipe's face mesh (0.10.21, 478 points):
eye centres midway between each eye's corners, the mouth midway between the lips. A finder
passes when each eye lies within half an eye's width of the reference (a blinking lid drawn
eye_width wide still covers the eye) and the mouth within a quarter of the mouth's width (lips
drawn there still lie on hers), and the sizes are within a quarter of the reference's."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from service.domain.faces import FaceLandmarks
from service.generators.face_box import CascadeFaces
from service.generators.face_image import scaled
from service.generators.procedural import ProceduralPortraits
from service.generators.traits import traits_of

skimage_data = pytest.importorskip("skimage.data")

REFERENCE = {
    "left_eye": (204.2, 102.3),
    "right_eye": (247.1, 104.4),
    "mouth": (223.3, 146.2),
    "eye_width": 19.3,
    "mouth_width": 44.2,
}


def png_of(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def astronaut() -> bytes:
    return png_of(skimage_data.astronaut())


@pytest.fixture(scope="module")
def cascade() -> CascadeFaces:
    return CascadeFaces()


def distance(point, reference: tuple[float, float]) -> float:
    return float(np.hypot(point.x - reference[0], point.y - reference[1]))


def assert_on_her_face(face: FaceLandmarks) -> None:
    eye, mouth = REFERENCE["eye_width"], REFERENCE["mouth_width"]
    assert distance(face.left_eye, REFERENCE["left_eye"]) < eye / 2, face
    assert distance(face.right_eye, REFERENCE["right_eye"]) < eye / 2, face
    assert distance(face.mouth, REFERENCE["mouth"]) < mouth / 4, face
    assert abs(face.eye_width - eye) < eye / 4, face
    assert abs(face.mouth_width - mouth) < mouth / 4, face
    # The box holds the points, eyes above the mouth.
    for p in (face.left_eye, face.right_eye, face.mouth):
        assert face.left < p.x < face.left + face.width and face.top < p.y < face.top + face.height
    assert max(face.left_eye.y, face.right_eye.y) < face.mouth.y


def test_the_cascade_finds_the_astronauts_eyes_and_mouth(cascade, astronaut):
    faces = cascade.find(astronaut)
    assert len(faces) == 1
    assert faces[0].method == "box"
    assert_on_her_face(faces[0])


def test_points_are_in_the_stored_images_pixels_when_it_is_searched_smaller(cascade):
    """A large photo is searched scaled down; its points come back in its own pixels."""
    big = np.asarray(Image.fromarray(skimage_data.astronaut()).resize((1024, 1024)))
    (face,) = cascade.find(png_of(big))
    assert face.width > 150
    assert_on_her_face(scaled(face, 0.5))


@pytest.mark.parametrize(
    "pixels",
    [
        pytest.param(lambda: skimage_data.coffee(), id="coffee"),
        pytest.param(lambda: skimage_data.chelsea(), id="a cat"),
        pytest.param(lambda: np.full((300, 400, 3), 128, np.uint8), id="flat"),
        pytest.param(lambda: np.zeros((8, 8, 3), np.uint8), id="tiny"),
    ],
)
def test_images_without_a_face_give_none(cascade, pixels):
    assert cascade.find(png_of(pixels())) == []


def test_bytes_that_are_no_image_are_a_value_error(cascade):
    with pytest.raises(ValueError, match="PNG, JPEG or WebP"):
        cascade.find(b"GIF89a not a picture")


def test_the_face_mesh_finds_her_too_when_installed(astronaut):
    pytest.importorskip("mediapipe")
    from service.generators.face_mesh import MeshFaces

    (face,) = MeshFaces().find(astronaut)
    assert face.method == "landmarks"
    assert_on_her_face(face)


def luminance(pixels: np.ndarray, point) -> float:
    return float(pixels[int(point.y), int(point.x)].astype(float) @ (0.299, 0.587, 0.114))


@pytest.mark.parametrize("seed,size", [(2, (384, 384)), (9, (256, 400)), (4, (500, 300))])
def test_generated_portraits_carry_the_points_the_generator_drew(seed, size):
    """These seeds draw round or dot eyes without glasses (a dark pupil at the eye's centre)
    and a smile or grin; on any image shape the points land on them."""
    generator, width, height = ProceduralPortraits(), *size
    traits = traits_of("a person", seed)
    assert traits.eye_style in ("round", "dot")
    face = generator.face("a person", width, height, seed)
    pixels = np.asarray(Image.open(io.BytesIO(generator.render("a person", width, height, seed))))
    assert face.method == "generator"
    for eye in (face.left_eye, face.right_eye):
        assert luminance(pixels, eye) < 60
    # At the mouth, lips (or the open mouth) unlike the cheek a mouth's width beside it.
    cheek = pixels[int(face.mouth.y), int(face.mouth.x - face.mouth_width)].astype(int)
    lips = pixels[int(face.mouth.y) - 2 : int(face.mouth.y) + 3, int(face.mouth.x)].astype(int)
    assert np.abs(lips - cheek).max() > 25  # the lips are a thin, anti-aliased line
    assert face.left_eye.x < face.mouth.x < face.right_eye.x
    assert face.left < face.left_eye.x and face.right_eye.x < face.left + face.width
