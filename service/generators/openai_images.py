"""The OpenAI-compatible images backend (AVATAR_IMAGE_BASE_URL, e.g. `http://127.0.0.1:8080/v1`):
`POST {base}/images/generations` (JSON) for a prompt alone, `POST {base}/images/edits`
(multipart, the reference images as `image`, or `image[]` when there are several) with
reference images. `seed` is sent only when the request has one (OpenAI's own models ignore
it; Stable Diffusion servers honour it).

The answer's first item carries the picture as `b64_json` or as a `url`. A URL is the
backend's choice, not the operator's: it is fetched under the rule of every URL an owner
names (`service.outbound`: https and public addresses only, unless
AVATAR_WEBHOOK_ALLOW_PRIVATE), connecting to the address checked."""

from __future__ import annotations

import base64
import binascii

import httpx
import msgspec

from service.domain.drawing import ImageFailed, Reference
from service.generators.backend_http import bearer, post_for_bytes, read_bytes
from service.outbound import UrlRefused, check_url
from service.responders.net import AddressRefused, checked_client
from service.settings import Settings

# Drawing takes a while on a busy GPU: a task waits this long for the answer to start (the
# synchronous call gives up sooner, see `image_generation.SYNC_LIMIT_S`).
TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=60.0)
# The longest answer read: a base64 PNG of 4096 x 4096 is about 64 MB.
MAX_ANSWER_BYTES = 96 * 1024 * 1024


class OpenAIImages:
    """`service.domain.drawing.ImageBackend` on an OpenAI-compatible images API."""

    def __init__(
        self, base_url: str, api_key: str | None, model: str, *, allow_private: bool
    ) -> None:
        self._base, self._headers = base_url.rstrip("/"), bearer(api_key)
        self._model, self._allow_private = model, allow_private

    async def draw(
        self, prompt: str, size: str, seed: int | None, references: list[Reference]
    ) -> bytes:
        fields: dict = {"model": self._model, "prompt": prompt, "size": size, "n": 1}
        if seed is not None:
            fields["seed"] = seed
        # One client a picture: pictures are few and slow, and a task runs on a loop of its own.
        async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as client:
            if references:
                answer = await self._post(
                    client, "/images/edits", data=_form(fields), files=_parts(references)
                )
            else:
                answer = await self._post(client, "/images/generations", json=fields)
        b64, url = _picture_of(answer)
        if b64 is not None:
            return b64
        return await self._fetch(url)

    async def _post(self, client: httpx.AsyncClient, path: str, **kwargs) -> bytes:
        url = self._base + path
        return await post_for_bytes(
            client, url, "image", ImageFailed, MAX_ANSWER_BYTES, headers=self._headers, **kwargs
        )

    async def _fetch(self, url: str) -> bytes:
        try:
            check_url(url, allow_private=self._allow_private)
        except UrlRefused as exc:
            raise ImageFailed(f"The image backend answered a URL that {exc}.") from None
        client = checked_client(allow_private=self._allow_private, timeout=TIMEOUT)
        try:
            async with client:
                return await read_bytes(client, "GET", url, "image", ImageFailed, MAX_ANSWER_BYTES)
        except AddressRefused as exc:  # checked when the connection opens (not an HTTPError)
            message = f"The image backend answered a URL whose host may not be called: {exc}."
            raise ImageFailed(message) from None


def _form(fields: dict) -> dict[str, str]:
    return {name: str(value) for name, value in fields.items()}


def _parts(references: list[Reference]) -> list[tuple[str, tuple[str, bytes, str]]]:
    name = "image" if len(references) == 1 else "image[]"
    return [
        (name, (f"reference-{i}.png", reference.png, "image/png"))
        for i, reference in enumerate(references, 1)
    ]


def _picture_of(answer: bytes) -> tuple[bytes | None, str]:
    """(the decoded `b64_json`, "") or (None, the `url`) of the answer's first picture."""
    try:
        first = msgspec.json.decode(answer)["data"][0]
        b64, url = first.get("b64_json"), first.get("url")
        if isinstance(b64, str) and b64:
            return base64.b64decode(b64, validate=True), ""
        if isinstance(url, str) and url:
            return None, url
    except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError):
        pass
    except (binascii.Error, ValueError):
        raise ImageFailed("The image backend's b64_json is not base64.") from None
    raise ImageFailed("The image backend's answer holds no picture (b64_json or url).")


def image_backend(settings: Settings) -> OpenAIImages | None:
    """The backend AVATAR_IMAGE_BASE_URL names, or None when it is unset."""
    if not settings.image_base_url:
        return None
    return OpenAIImages(
        settings.image_base_url,
        settings.image_api_key,
        settings.image_model,
        allow_private=settings.webhook_allow_private,
    )
