"""Untrusted avatar images: decoded with Pillow under strict limits and re-encoded as PNG,
so what the service serves is always an image it produced itself."""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps, UnidentifiedImageError

from service.domain.errors import PayloadTooLarge, ValidationFailed

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_IMAGE_SIDE = 4096
_FORMATS = ("PNG", "JPEG", "WEBP")


class EncodedImage:
    __slots__ = ("height", "png", "width")

    def __init__(self, png: bytes, width: int, height: int) -> None:
        self.png, self.width, self.height = png, width, height


def _invalid(message: str) -> ValidationFailed:
    return ValidationFailed.field("image", message)


def _open_checked(data: bytes) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=_FORMATS)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
        raise _invalid("must be a PNG, JPEG or WebP image") from None
    width, height = image.size
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise _invalid(f"is {width}x{height}; each side must be at most {MAX_IMAGE_SIDE} px")
    return image


def reencode_png(data: bytes) -> EncodedImage:
    """Decode a PNG/JPEG/WebP upload (<= 10 MB, <= 4096 px a side) and re-encode it as PNG."""
    if len(data) > MAX_IMAGE_BYTES:
        raise PayloadTooLarge(f"The image is {len(data)} bytes; at most {MAX_IMAGE_BYTES} allowed.")
    if not data:
        raise _invalid("is empty")
    with warnings.catch_warnings():
        # A decompression bomb is refused, not merely warned about.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        image = _open_checked(data)
        try:
            image.load()
            image = ImageOps.exif_transpose(image)
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            raise _invalid("declares more pixels than allowed") from None
        except (OSError, ValueError, SyntaxError):
            raise _invalid("could not be decoded (truncated or corrupt)") from None
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    image = image.convert("RGBA" if has_alpha else "RGB")
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return EncodedImage(out.getvalue(), image.width, image.height)
