"""The body limits in a test app (service/api/body_limits.py): the free-space floor, the
free space looked at again while an upload streams, and upload slots shared by separate
holders of one data dir, as the HTTP workers of one `serve` are (test_attack_stalled_uploads
shows them on real serve processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.api.body_limits import RECHECK_BYTES, BodyLimits
from service.domain.errors import RateLimited

GIB = 1024**3


def test_uploads_are_refused_below_the_floor_and_json_goes_on(make_api, png_bytes):
    api = make_api(min_free_bytes=10**18)
    auth = api.key()
    files = {"image": ("a.png", png_bytes(), "image/png")}
    answer = api.post("/v1/avatars", auth, files=files)
    assert answer.status_code == 507, answer.text
    assert answer.json()["error"]["code"] == "INSUFFICIENT_STORAGE"
    assert api.post("/v1/agents", auth, json={"name": "Ada"}).status_code == 201


def test_free_space_is_looked_at_again_while_an_upload_streams(make_api, mp4_bytes):
    api = make_api(min_free_bytes=GIB)
    auth = api.key()
    looks = []

    def free_bytes() -> int:  # room at the start; gone once the upload is under way
        looks.append(len(looks))
        return 10 * GIB if len(looks) == 1 else GIB // 2

    api.ctx.files.free_bytes = free_bytes
    video = mp4_bytes() + b"\0" * (RECHECK_BYTES + 1)
    files = {"file": ("a.mp4", video, "video/mp4")}
    answer = api.post("/v1/video/upscale?resolution=2k", auth, files=files)
    assert answer.status_code == 507, answer.text
    assert len(looks) == 2
    uploads = api.ctx.settings.data_dir / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())


class _Settings:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.upload_idle_s, self.max_uploads_per_key, self.min_free_bytes = 30.0, 2, 0


class _Ctx:
    def __init__(self, data_dir: Path) -> None:
        self.settings = _Settings(data_dir)


def test_slots_are_shared_by_every_holder_of_the_data_dir(tmp_path):
    first, second = BodyLimits(_Ctx(tmp_path)), BodyLimits(_Ctx(tmp_path))
    with first.slot("key_a"), second.slot("key_a"):
        for limits in (first, second):
            with pytest.raises(RateLimited) as refused, limits.slot("key_a"):
                pass
            assert refused.value.retry_after == 5
        with first.slot("key_b"):  # another key has slots of its own
            pass
    with second.slot("key_a"), second.slot("key_a"):  # both came free
        pass
