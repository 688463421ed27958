"""Orientation views, display matrices and chroma siting offsets."""

from __future__ import annotations

import numpy as np
import pytest

from engine.video.geometry import (
    CHROMA_LOCATION_NAMES,
    Orientation,
    chroma_offset,
    orientation_from_matrix,
    reversed_siting,
    siting,
)
from engine.video.planes import plane_targets

ONE = 65536  # 16.16 fixed point, as in the tkhd box


@pytest.mark.parametrize(
    ("matrix", "rotation", "mirrored"),
    [
        ((ONE, 0, 0, ONE), 0, False),
        ((0, -ONE, ONE, 0), 90, False),
        ((-ONE, 0, 0, -ONE), 180, False),
        ((0, ONE, -ONE, 0), 270, False),
        ((-ONE, 0, 0, ONE), 0, True),
        ((0, -ONE, -ONE, 0), 270, True),
        ((2 * ONE, 0, 0, 2 * ONE), 0, False),  # a uniform scale changes no orientation
    ],
)
def test_display_matrices(matrix, rotation, mirrored):
    assert orientation_from_matrix(*matrix) == Orientation(rotation, mirrored)


@pytest.mark.parametrize("matrix", [(46341, -46341, 46341, 46341), (ONE, 0, 0, 2 * ONE), (0,) * 4])
def test_other_matrices_are_not_orientations(matrix):
    assert orientation_from_matrix(*matrix) is None


def test_views_follow_ffmpeg_autorotate():
    """Stored x runs along the matrix's (a, b) on screen and stored y along (c, d)."""
    stored = np.arange(6).reshape(2, 3)  # 3 wide, 2 tall
    assert Orientation(90).view(stored).tolist() == [[2, 5], [1, 4], [0, 3]]
    assert Orientation(270).view(stored).tolist() == [[3, 0], [4, 1], [5, 2]]
    assert Orientation(180).view(stored).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert Orientation(0, True).view(stored).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert Orientation(90).display_size(3, 2) == (2, 3)


def test_axis_sources():
    assert Orientation().axis_sources() == ((0, False), (1, False))
    assert Orientation(90).axis_sources() == ((1, False), (0, True))
    assert Orientation(0, True).axis_sources() == ((0, True), (1, False))


def test_siting_per_format():
    assert siting("left", (2, 2)) == (0.0, 0.5)
    assert siting("topleft", (2, 2)) == (0.0, 0.0)
    assert siting("bottom", (2, 2)) == (0.5, 1.0)
    assert siting("center", (2, 1)) == (0.0, 0.0)  # 4:2:2 chroma is co-sited
    assert siting("left", (1, 1)) == (0.0, 0.0)
    assert len(CHROMA_LOCATION_NAMES) == 6
    assert reversed_siting(0.0, 2) == 1.0 and reversed_siting(0.5, 2) == 0.5


@pytest.mark.parametrize(("luma_in", "luma_out"), [(640, 1920), (1280, 3840), (360, 1080)])
def test_left_siting_offset_is_a_quarter_of_one_minus_ratio(luma_in, luma_out):
    assert chroma_offset(luma_in, luma_out, 2, 2, 0.0, 0.0) == pytest.approx(
        0.25 * (1 - luma_in / luma_out)
    )
    assert chroma_offset(luma_in, luma_out, 2, 2, 0.5, 0.5) == pytest.approx(0.0)
    assert chroma_offset(luma_in, luma_out, 1, 1, 0.0, 0.0) == pytest.approx(0.0)


@pytest.mark.parametrize("site", [0.0, 0.5, 1.0])
@pytest.mark.parametrize(("sub_in", "sub_out"), [(2, 2), (1, 2), (2, 1)])
def test_offset_maps_sample_positions_exactly(site, sub_in, sub_out):
    """Every output chroma sample lands where its physical position lies in the input."""
    luma_in, luma_out = 360, 1080
    site_in = site if sub_in == 2 else 0.0
    site_out = site if sub_out == 2 else 0.0
    dx = chroma_offset(luma_in, luma_out, sub_in, sub_out, site_in, site_out)
    ratio = (luma_in / sub_in) / (luma_out / sub_out)
    for j in range(5):
        physical = (sub_out * j + site_out + 0.5) * luma_in / luma_out
        wanted = (physical - site_in - 0.5) / sub_in
        assert (j + 0.5) * ratio - 0.5 + dx == pytest.approx(wanted)


def test_plane_targets_for_rotated_420():
    luma, u, v = plane_targets("4:2:0", "left", Orientation(90), (360, 640), (1080, 1920))
    assert (luma.width, luma.height, luma.offset) == (1080, 1920, (0.0, 0.0))
    assert (u.width, u.height) == (540, 960) and u == v
    # displayed x comes from stored y (centre-sited), displayed y from stored x read backwards
    assert u.offset == pytest.approx((chroma_offset(360, 1080, 2, 2, 0.5, 0.0),
                                      chroma_offset(640, 1920, 2, 2, 1.0, 0.5)))  # fmt: skip
