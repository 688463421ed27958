"""The SPS reader: exp-Golomb codes, emulation prevention, avcC/Annex B, and x264's real SPSs."""

from __future__ import annotations

import av
import pytest

from engine.video.h264 import (
    BitstreamError,
    _BitReader,
    find_sps,
    parse_sps,
    read_sps,
    unescape_rbsp,
)


class BitWriter:
    def __init__(self) -> None:
        self.bits: list[int] = []

    def u(self, value: int, count: int) -> BitWriter:
        self.bits += [(value >> (count - 1 - i)) & 1 for i in range(count)]
        return self

    def ue(self, value: int) -> BitWriter:
        code = value + 1
        return self.u(0, code.bit_length() - 1).u(code, code.bit_length())

    def se(self, value: int) -> BitWriter:
        return self.ue(2 * value - 1 if value > 0 else -2 * value)

    def rbsp(self) -> bytes:
        bits = [*self.bits, 1]  # rbsp_stop_one_bit, then zero padding
        bits += [0] * (-len(bits) % 8)
        return bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))


def escape(rbsp: bytes) -> bytes:
    out, zeros = bytearray(), 0
    for byte in rbsp:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def baseline_sps(vui: BitWriter | None = None, profile: int = 66) -> bytes:
    """A hand-built SPS: 1280x720 in macroblocks, optionally followed by VUI bits."""
    w = BitWriter().u(profile, 8).u(0, 8).u(31, 8).ue(0)
    if profile == 100:
        # 4:2:2, 8-bit, with a scaling matrix whose first list has explicit deltas
        w.ue(2).ue(0).ue(0).u(0, 1).u(1, 1)
        w.u(1, 1)
        for _ in range(16):
            w.se(1)
        w.u(0, 7)
    w.ue(0).ue(2).ue(4).u(0, 1).ue(79).ue(44).u(1, 1).u(1, 1).u(0, 1)
    if vui is None:
        w.u(0, 1)
    else:
        w.u(1, 1).bits += vui.bits
    return b"\x67" + escape(w.rbsp())


def avcc(sps: bytes) -> bytes:
    return bytes([1, sps[1], sps[2], sps[3], 0xFF, 0xE1]) + len(sps).to_bytes(2, "big") + sps


@pytest.mark.parametrize("value", [0, 1, 2, 3, 7, 8, 254, 255, 65535, 2**31 - 2])
def test_exp_golomb_round_trip(value):
    rbsp = BitWriter().ue(value).se(-(value // 2)).se(value // 2 + 1).rbsp()
    reader = _BitReader(rbsp)
    assert (reader.ue(), reader.se(), reader.se()) == (value, -(value // 2), value // 2 + 1)


def test_emulation_prevention_bytes_are_removed():
    assert unescape_rbsp(b"\x00\x00\x03\x01\x00\x00\x03\x00\x03") == b"\x00\x00\x01\x00\x00\x00\x03"
    assert unescape_rbsp(b"\x01\x03\x00\x03") == b"\x01\x03\x00\x03"


def test_vui_fields_are_read():
    vui = (BitWriter().u(1, 1).u(255, 8).u(4, 16).u(3, 16)  # SAR 4:3
           .u(0, 1)  # no overscan info
           .u(1, 1).u(5, 3).u(1, 1).u(1, 1).u(9, 8).u(16, 8).u(9, 8)  # full range, BT.2020 PQ
           .u(1, 1).ue(3).ue(3))  # chroma location top  # fmt: skip
    sps = parse_sps(baseline_sps(vui))
    assert sps.profile_idc == 66 and sps.chroma_format_idc == 1 and sps.bit_depth_luma == 8
    assert sps.frame_mbs_only
    assert sps.sample_aspect_ratio == (4, 3)
    assert sps.full_range is True
    assert (sps.colour_primaries, sps.transfer_characteristics, sps.matrix_coefficients) == (
        9,
        16,
        9,
    )
    assert sps.chroma_sample_loc_type == 3


def test_high_profile_with_scaling_lists_and_table_sar():
    vui = BitWriter().u(1, 1).u(1, 8).u(0, 1).u(0, 1).u(1, 1).ue(1).ue(1)
    sps = parse_sps(baseline_sps(vui, profile=100))
    assert sps.chroma_format_idc == 2
    assert sps.sample_aspect_ratio == (1, 1)
    assert sps.chroma_sample_loc_type == 1 and sps.full_range is None


def test_absent_vui_means_defaults():
    sps = read_sps(avcc(baseline_sps()))
    assert sps.chroma_sample_loc_type is None and sps.sample_aspect_ratio is None


def test_annex_b_extradata():
    data = b"\x00\x00\x00\x01" + baseline_sps() + b"\x00\x00\x01\x68\xce\x38\x80"
    assert find_sps(data) == baseline_sps()


@pytest.mark.parametrize(
    "data",
    [b"", b"\x01\x64\x00", avcc(baseline_sps())[:12], b"\x01\x42\x00\x1f\xff\xe0",
     b"\x00\x00\x01\x68\xce"],
)  # fmt: skip
def test_malformed_extradata_raises(data):
    with pytest.raises(BitstreamError):
        read_sps(data)


@pytest.mark.parametrize(
    ("pix_fmt", "params", "expect"),
    [
        ("yuv420p", "", dict(chroma_format_idc=1, chroma_sample_loc_type=None)),
        ("yuv420p", "chromaloc=2:cqm=jvt", dict(chroma_sample_loc_type=2)),
        ("yuv420p", "chromaloc=5", dict(chroma_sample_loc_type=5)),
        ("yuv422p", "sar=4/3:fullrange=on", dict(chroma_format_idc=2, full_range=True,
                                                 sample_aspect_ratio=(4, 3))),
        ("yuv444p", "", dict(chroma_format_idc=3)),
        ("yuv420p10le", "interlaced=1", dict(bit_depth_luma=10, frame_mbs_only=False)),
    ],
)  # fmt: skip
def test_x264_sequence_parameter_sets(clip_maker, tmp_path, pix_fmt, params, expect):
    path = clip_maker(tmp_path / "x.mp4", width=64, height=48, frames=1, audio=(),
                      pix_fmt=pix_fmt, x264_params=params)  # fmt: skip
    with av.open(str(path)) as container:
        sps = read_sps(container.streams.video[0].codec_context.extradata)
    for field, value in expect.items():
        assert getattr(sps, field) == value, field
