"""Untrusted images (avatar uploads, photos to build avatars from, reference images, what an
images backend answers): decoded with Pillow under strict limits and re-encoded (PNG, or JPEG
for generated pictures), so what the service serves is always an image it produced itself."""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps, UnidentifiedImageError

from service.domain.errors import PayloadTooLarge, ValidationFailed

MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_IMAGE_SIDE = 4096
# Uploaded avatars (SPEC 2a); the media endpoints of SPEC 14 take WebP too.
UPLOAD_FORMATS = ("PNG", "JPEG")
MEDIA_FORMATS = ("PNG", "JPEG", "WEBP")
_NAMES = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP"}
JPEG_QUALITY = 90


class EncodedImage:
    __slots__ = ("height", "png", "width")

    def __init__(self, png: bytes, width: int, height: int) -> None:
        self.png, self.width, self.height = png, width, height


def _open_checked(data: bytes, field: str, formats: tuple[str, ...]) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=formats)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
        names = [_NAMES[f] for f in formats]
        allowed = ", ".join(names[:-1]) + " or " + names[-1]
        raise ValidationFailed.field(field, f"must be a {allowed} image") from None
    width, height = image.size
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        message = f"is {width}x{height}; each side must be at most {MAX_IMAGE_SIDE} px"
        raise ValidationFailed.field(field, message)
    return image


def decode_image(
    data: bytes,
    *,
    field: str = "image",
    formats: tuple[str, ...] = UPLOAD_FORMATS,
    max_bytes: int = MAX_IMAGE_BYTES,
) -> Image.Image:
    """An untrusted image (<= `max_bytes`, <= 4096 px a side, of `formats`) decoded, upright
    (EXIF orientation applied), in RGB or RGBA; ValidationFailed naming `field` otherwise."""
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"The image is {len(data)} bytes; at most {max_bytes} allowed.")
    if not data:
        raise ValidationFailed.field(field, "is empty")
    with warnings.catch_warnings():
        # A decompression bomb is refused, not merely warned about.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        image = _open_checked(data, field, formats)
        try:
            image.load()
            image = ImageOps.exif_transpose(image)
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            raise ValidationFailed.field(field, "declares more pixels than allowed") from None
        except (OSError, ValueError, SyntaxError):
            message = "could not be decoded (truncated or corrupt)"
            raise ValidationFailed.field(field, message) from None
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")


def encode_png(image: Image.Image) -> EncodedImage:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return EncodedImage(out.getvalue(), image.width, image.height)


def encode_jpeg(image: Image.Image) -> bytes:
    """`image` as a baseline JPEG (transparency flattened onto white)."""
    if image.mode == "RGBA":
        flat = Image.new("RGB", image.size, (255, 255, 255))
        flat.paste(image, mask=image.getchannel("A"))
        image = flat
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def reencode_png(data: bytes) -> EncodedImage:
    """Decode an avatar upload (PNG or JPEG, <= 10 MB, <= 4096 px a side) and re-encode it as
    PNG."""
    return encode_png(decode_image(data))
