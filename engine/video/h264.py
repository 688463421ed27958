"""Reads the H.264 sequence parameter set (ITU-T H.264 section 7.3.2.1 and annex E) from the
codec extradata, for the facts FFmpeg's Python binding does not expose: the chroma sample
location, and the SPS's own view of chroma format, bit depth, field coding and pixel aspect.

Only the SPS fields up to `chroma_loc_info` in the VUI are read; the rest of the VUI (timing,
HRD, bitstream restrictions) is not needed and is left unparsed.
"""

from __future__ import annotations

from dataclasses import dataclass

# Profiles whose SPS carries chroma_format_idc, bit depths and scaling matrices (7.3.2.1.1).
_HIGH_PROFILES = frozenset({100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135})
_NAL_SPS = 7
# Table E-1: aspect_ratio_idc -> sample aspect ratio (255 means explicit sar_width/sar_height).
_SAR_TABLE = {
    1: (1, 1), 2: (12, 11), 3: (10, 11), 4: (16, 11), 5: (40, 33), 6: (24, 11), 7: (20, 11),
    8: (32, 11), 9: (80, 33), 10: (18, 11), 11: (15, 11), 12: (64, 33), 13: (160, 99),
    14: (4, 3), 15: (3, 2), 16: (2, 1),
}  # fmt: skip
_EXTENDED_SAR = 255


class BitstreamError(ValueError):
    """The extradata or SPS is truncated or malformed."""


@dataclass(frozen=True)
class SequenceParameters:
    profile_idc: int
    chroma_format_idc: int  # 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4
    bit_depth_luma: int
    bit_depth_chroma: int
    frame_mbs_only: bool  # False: the stream may code fields (interlaced)
    sample_aspect_ratio: tuple[int, int] | None  # None when the VUI does not say
    full_range: bool | None
    colour_primaries: int | None
    transfer_characteristics: int | None
    matrix_coefficients: int | None
    chroma_sample_loc_type: int | None  # top field / frame value; None when absent (means 0)


class _BitReader:
    """MSB-first reader over an RBSP (emulation prevention bytes already removed)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def bits(self, count: int) -> int:
        value = 0
        for _ in range(count):
            byte_index = self._pos >> 3
            if byte_index >= len(self._data):
                raise BitstreamError("SPS ends early")
            value = (value << 1) | ((self._data[byte_index] >> (7 - (self._pos & 7))) & 1)
            self._pos += 1
        return value

    def flag(self) -> bool:
        return self.bits(1) == 1

    def ue(self) -> int:
        """Unsigned exp-Golomb code (9.1)."""
        leading_zeros = 0
        while self.bits(1) == 0:
            leading_zeros += 1
            if leading_zeros > 31:
                raise BitstreamError("exp-Golomb code longer than 32 bits")
        return (1 << leading_zeros) - 1 + self.bits(leading_zeros)

    def se(self) -> int:
        """Signed exp-Golomb code (9.1.1): 1, 2, 3, 4 ... map to 1, -1, 2, -2 ..."""
        code = self.ue()
        return (code + 1) // 2 if code & 1 else -(code // 2)


def unescape_rbsp(nal_payload: bytes) -> bytes:
    """Drop each emulation prevention byte: 0x03 after two zero bytes (7.4.1)."""
    out = bytearray()
    zeros = 0
    for byte in nal_payload:
        if zeros >= 2 and byte == 3:
            zeros = 0
            continue
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def _sps_from_avcc(extradata: bytes) -> bytes:
    if len(extradata) < 7 or extradata[0] != 1:
        raise BitstreamError("extradata is not an avcC record")
    count = extradata[5] & 0x1F
    pos = 6
    for _ in range(count):
        if pos + 2 > len(extradata):
            break
        size = int.from_bytes(extradata[pos : pos + 2], "big")
        nal = extradata[pos + 2 : pos + 2 + size]
        if len(nal) == size and size > 1 and nal[0] & 0x1F == _NAL_SPS:
            return nal
        pos += 2 + size
    raise BitstreamError("avcC record holds no sequence parameter set")


def _sps_from_annex_b(extradata: bytes) -> bytes:
    for chunk in extradata.split(b"\x00\x00\x01"):
        nal = chunk.rstrip(b"\x00")
        if len(nal) > 1 and nal[0] & 0x1F == _NAL_SPS:
            return nal
    raise BitstreamError("extradata holds no sequence parameter set")


def find_sps(extradata: bytes) -> bytes:
    """Return the first SPS NAL unit (header byte included) of avcC or Annex B extradata."""
    if extradata.startswith((b"\x00\x00\x01", b"\x00\x00\x00\x01")):
        return _sps_from_annex_b(extradata)
    return _sps_from_avcc(extradata)


def _skip_scaling_list(reader: _BitReader, size: int) -> None:
    last_scale = next_scale = 8
    for _ in range(size):
        if next_scale != 0:
            next_scale = (last_scale + reader.se() + 256) % 256
        last_scale = next_scale or last_scale


def _read_chroma_and_depth(reader: _BitReader, profile_idc: int) -> tuple[int, int, int]:
    if profile_idc not in _HIGH_PROFILES:
        return 1, 8, 8
    chroma_format_idc = reader.ue()
    if chroma_format_idc == 3:
        reader.flag()  # separate_colour_plane_flag
    depth_luma = reader.ue() + 8
    depth_chroma = reader.ue() + 8
    reader.flag()  # qpprime_y_zero_transform_bypass_flag
    if reader.flag():  # seq_scaling_matrix_present_flag
        for index in range(12 if chroma_format_idc == 3 else 8):
            if reader.flag():
                _skip_scaling_list(reader, 16 if index < 6 else 64)
    return chroma_format_idc, depth_luma, depth_chroma


def _skip_frame_numbering(reader: _BitReader) -> None:
    reader.ue()  # log2_max_frame_num_minus4
    poc_type = reader.ue()
    if poc_type == 0:
        reader.ue()  # log2_max_pic_order_cnt_lsb_minus4
    elif poc_type == 1:
        reader.flag()  # delta_pic_order_always_zero_flag
        reader.se()  # offset_for_non_ref_pic
        reader.se()  # offset_for_top_to_bottom_field
        for _ in range(reader.ue()):
            reader.se()  # offset_for_ref_frame[i]
    reader.ue()  # max_num_ref_frames
    reader.flag()  # gaps_in_frame_num_value_allowed_flag
    reader.ue()  # pic_width_in_mbs_minus1
    reader.ue()  # pic_height_in_map_units_minus1


def _read_vui(reader: _BitReader) -> dict[str, object]:
    vui: dict[str, object] = {}
    if reader.flag():  # aspect_ratio_info_present_flag
        idc = reader.bits(8)
        if idc == _EXTENDED_SAR:
            vui["sample_aspect_ratio"] = (reader.bits(16), reader.bits(16))
        else:
            vui["sample_aspect_ratio"] = _SAR_TABLE.get(idc)
    if reader.flag():  # overscan_info_present_flag
        reader.flag()
    if reader.flag():  # video_signal_type_present_flag
        reader.bits(3)  # video_format
        vui["full_range"] = reader.flag()
        if reader.flag():  # colour_description_present_flag
            vui["colour_primaries"] = reader.bits(8)
            vui["transfer_characteristics"] = reader.bits(8)
            vui["matrix_coefficients"] = reader.bits(8)
    if reader.flag():  # chroma_loc_info_present_flag
        vui["chroma_sample_loc_type"] = reader.ue()
        reader.ue()  # chroma_sample_loc_type_bottom_field
    return vui


def parse_sps(nal: bytes) -> SequenceParameters:
    """Parse an SPS NAL unit (with its one-byte header)."""
    reader = _BitReader(unescape_rbsp(nal[1:]))
    profile_idc = reader.bits(8)
    reader.bits(16)  # constraint flags, level_idc
    reader.ue()  # seq_parameter_set_id
    chroma_format_idc, depth_luma, depth_chroma = _read_chroma_and_depth(reader, profile_idc)
    _skip_frame_numbering(reader)
    frame_mbs_only = reader.flag()
    if not frame_mbs_only:
        reader.flag()  # mb_adaptive_frame_field_flag
    reader.flag()  # direct_8x8_inference_flag
    if reader.flag():  # frame_cropping_flag
        for _ in range(4):
            reader.ue()
    vui = _read_vui(reader) if reader.flag() else {}
    return SequenceParameters(
        profile_idc=profile_idc,
        chroma_format_idc=chroma_format_idc,
        bit_depth_luma=depth_luma,
        bit_depth_chroma=depth_chroma,
        frame_mbs_only=frame_mbs_only,
        sample_aspect_ratio=vui.get("sample_aspect_ratio"),  # type: ignore[arg-type]
        full_range=vui.get("full_range"),  # type: ignore[arg-type]
        colour_primaries=vui.get("colour_primaries"),  # type: ignore[arg-type]
        transfer_characteristics=vui.get("transfer_characteristics"),  # type: ignore[arg-type]
        matrix_coefficients=vui.get("matrix_coefficients"),  # type: ignore[arg-type]
        chroma_sample_loc_type=vui.get("chroma_sample_loc_type"),  # type: ignore[arg-type]
    )


def read_sps(extradata: bytes) -> SequenceParameters:
    """Find and parse the first SPS in avcC (MP4) or Annex B extradata."""
    return parse_sps(find_sps(extradata))
