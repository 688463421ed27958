"""Reads the display matrix of each MP4 track (ISO/IEC 14496-12 `tkhd`) straight from the boxes.

PyAV 18 exposes a stream's display matrix only on decoded frames; reading the `tkhd` box keeps
`probe` header-only. Only box headers are read on the way to `moov`, so a file whose `moov`
sits after a large `mdat` costs a few seeks, not a read of the media data.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

_HEADER = struct.Struct(">I4s")
_MATRIX = struct.Struct(">9i")
_MAX_MOOV_BYTES = 256 << 20  # a moov this large is not an upload we accept anyway

Matrix = tuple[int, int, int, int]  # (a, b, c, d) of the 16.16 fixed-point 2x2 part


def _boxes(stream: BinaryIO, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    """Yield (type, payload_start, payload_end) for each box in [start, end)."""
    pos = start
    while pos + 8 <= end:
        stream.seek(pos)
        header = stream.read(8)
        if len(header) < 8:
            return
        size, kind = _HEADER.unpack(header)
        payload = pos + 8
        if size == 1:
            large = stream.read(8)
            if len(large) < 8:
                return
            size = int.from_bytes(large, "big")
            payload += 8
        elif size == 0:
            size = end - pos
        if size < payload - pos or pos + size > end:
            return
        yield kind, payload, pos + size
        pos += size


def _track_matrix(tkhd: bytes) -> tuple[int, Matrix] | None:
    version = tkhd[0] if tkhd else 0
    # full box header (4), then times and ids: 32-bit fields in version 0, 64-bit in version 1
    id_at, matrix_at = (20, 52) if version == 1 else (12, 40)
    if len(tkhd) < matrix_at + _MATRIX.size:
        return None
    track_id = int.from_bytes(tkhd[id_at : id_at + 4], "big")
    a, b, _u, c, d, _v, _x, _y, _w = _MATRIX.unpack_from(tkhd, matrix_at)
    return track_id, (a, b, c, d)


def track_matrices(path: str) -> dict[int, Matrix]:
    """Map each track_ID to the (a, b, c, d) part of its `tkhd` matrix (empty if none found)."""
    matrices: dict[int, Matrix] = {}
    with open(path, "rb") as stream:
        stream.seek(0, 2)
        file_end = stream.tell()
        for kind, start, end in _boxes(stream, 0, file_end):
            if kind != b"moov" or end - start > _MAX_MOOV_BYTES:
                continue
            for trak_kind, trak_start, trak_end in _boxes(stream, start, end):
                if trak_kind != b"trak":
                    continue
                for box_kind, box_start, box_end in _boxes(stream, trak_start, trak_end):
                    if box_kind == b"tkhd":
                        stream.seek(box_start)
                        found = _track_matrix(stream.read(min(box_end - box_start, 128)))
                        if found:
                            matrices[found[0]] = found[1]
            break
    return matrices
