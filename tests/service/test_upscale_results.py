"""Upscale results through the test client: signed file links (tampering, the link's expiry,
the result's availability), Range and HEAD, and early deletion. Each test completes one task
in-process under the test's clock, so expiries are exact."""

from __future__ import annotations

import io
from urllib.parse import parse_qs, urlsplit

import av
import pytest

from service.domain.files import result_key
from tests.service.test_upscale import UPSCALE, run_next, submitted

URL_TTL_S = 600
RESULT_TTL_S = 3600


@pytest.fixture
def done(make_api, mp4_bytes):
    """(api, auth, task_id, file_url) of a completed upscale of the 160x90 clip."""
    api = make_api(x264_preset="ultrafast", url_ttl_s=URL_TTL_S, result_ttl_s=RESULT_TTL_S)
    auth = api.key()
    task_id = submitted(api, auth, mp4_bytes())["task_id"]
    run_next(api)
    return api, auth, task_id, file_url(api, auth, task_id)


def file_url(api, auth, task_id: str) -> str:
    response = api.get(f"{UPSCALE}/{task_id}", auth)
    assert response.status_code == 200, response.text
    return response.json()["data"]["result"]["output"]["file_url"]


def result_kept(api, task_id: str) -> bool:
    """Whether the file store holds the task's result (or, in the data dir, its folder)."""
    with api.client.portal() as portal:
        size = portal.call(api.ctx.files.size, result_key(task_id))
    return size is not None or (api.ctx.settings.data_dir / "results" / task_id).exists()


def fetch(api, url: str, **headers):
    parts = urlsplit(url)
    return api.client.get(f"{parts.path}?{parts.query}", headers=headers)


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def with_query(url: str, **changes: str) -> str:
    params = query(url) | changes
    return urlsplit(url)._replace(query="&".join(f"{k}={v}" for k, v in params.items())).geturl()


def flipped(signature: str) -> str:
    """`signature` with its first character changed."""
    return ("B" if signature[0] == "A" else "A") + signature[1:]


def error_code(response) -> str:
    return response.json()["error"]["code"]


def test_the_file_is_the_upscaled_video(done):
    api, _, task_id, url = done
    response = fetch(api, url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "video/mp4"
    assert response.headers["content-disposition"] == f'inline; filename="{task_id}.mp4"'
    assert response.headers["accept-ranges"] == "bytes"
    with av.open(io.BytesIO(response.content)) as container:
        stream = container.streams.video[0]
        assert (container.format.name.split(",")[0], stream.codec_context.name) == ("mov", "h264")
        assert (stream.width, stream.height) == (640, 360)
        assert sum(1 for _ in container.decode(stream)) == 10


def test_ranges_and_head(done):
    api, _, _, url = done
    whole = fetch(api, url).content
    size = len(whole)
    first = fetch(api, url, Range="bytes=0-99")
    assert first.status_code == 206
    assert first.headers["content-range"] == f"bytes 0-99/{size}"
    assert first.content == whole[:100]
    suffix = fetch(api, url, Range="bytes=-100")
    assert suffix.status_code == 206 and suffix.content == whole[-100:]
    assert suffix.headers["content-range"] == f"bytes {size - 100}-{size - 1}/{size}"
    outside = fetch(api, url, Range=f"bytes={size}-")
    assert outside.status_code == 416
    assert outside.headers["content-range"] == f"bytes */{size}"
    assert error_code(outside) == "RANGE_NOT_SATISFIABLE"
    parts = urlsplit(url)
    head = api.client.head(f"{parts.path}?{parts.query}")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(size)
    assert head.headers["content-type"] == "video/mp4"


@pytest.mark.parametrize(
    "tamper",
    [
        lambda url: with_query(url, signature=flipped(query(url)["signature"])),
        lambda url: with_query(url, expires=str(int(query(url)["expires"]) + 1)),
        lambda url: url.replace("/files/tsk_", "/files/tsk_X", 1),
        lambda url: url.split("?")[0],
        lambda url: with_query(url, expires="-1"),
        lambda url: with_query(url, signature="%C3%A9"),
    ],
    ids=["signature", "expiry", "path", "no-query", "negative-expiry", "non-ascii"],
)  # fmt: skip
def test_a_tampered_link_is_403_signature_invalid(done, tamper):
    api, _, _, url = done
    response = fetch(api, tamper(url))
    assert response.status_code == 403, response.text
    assert error_code(response) == "SIGNATURE_INVALID"


def test_a_link_expires_and_each_status_read_signs_a_fresh_one(done):
    api, auth, task_id, url = done
    api.clock.advance(URL_TTL_S - 1)
    assert fetch(api, url).status_code == 200
    fresh = file_url(api, auth, task_id)
    assert fresh != url
    api.clock.advance(1)
    expired = fetch(api, url)
    assert expired.status_code == 403
    assert error_code(expired) == "URL_EXPIRED"
    assert fetch(api, fresh).status_code == 200


def test_a_link_is_never_valid_past_readable_until(make_api, mp4_bytes):
    api = make_api(x264_preset="ultrafast", url_ttl_s=7200, result_ttl_s=60.5)
    auth = api.key()
    task_id = submitted(api, auth, mp4_bytes())["task_id"]
    run_next(api)
    url = file_url(api, auth, task_id)
    expires = int(query(url)["expires"])
    assert expires == (api.clock.now_ms() + 60_500) // 1000  # readable_until, not now + 2 h


def test_after_readable_until_the_status_and_the_file_answer_410(done):
    api, auth, task_id, url = done
    api.clock.advance(RESULT_TTL_S - URL_TTL_S)
    url = file_url(api, auth, task_id)  # a link valid right up to readable_until
    api.clock.advance(URL_TTL_S)
    assert result_kept(api, task_id)
    # The result's availability is checked before the link's own expiry (410, not 403).
    gone = fetch(api, url)
    assert gone.status_code == 410, gone.text
    assert error_code(gone) == "RESULT_EXPIRED"
    assert not result_kept(api, task_id)
    status = api.get(f"{UPSCALE}/{task_id}", auth)
    assert status.status_code == 410 and error_code(status) == "RESULT_EXPIRED"
    listed = api.get(UPSCALE, auth).json()["data"]["items"][0]
    assert listed["status"] == "COMPLETED" and "result" not in listed
    # A bad signature is still told apart first.
    assert error_code(fetch(api, with_query(url, signature="x"))) == "SIGNATURE_INVALID"


def test_the_status_call_answers_410_at_readable_until_even_before_the_sweep(done):
    api, auth, task_id, _ = done
    api.clock.advance(RESULT_TTL_S)
    status = api.get(f"{UPSCALE}/{task_id}", auth)
    assert status.status_code == 410, status.text
    assert result_kept(api, task_id)  # a read writes nothing; the sweeper deletes it


def test_delete_removes_the_result_early(done):
    api, auth, task_id, url = done
    deleted = api.post(f"{UPSCALE}/{task_id}/delete", auth)
    assert deleted.status_code == 200, deleted.text
    view = deleted.json()["data"]
    assert view["status"] == "COMPLETED" and "result" not in view
    assert view["billing"] == {"billable_seconds": 5.0}
    assert not result_kept(api, task_id)
    status = api.get(f"{UPSCALE}/{task_id}", auth)
    assert status.status_code == 410 and "deleted" in status.json()["error"]["message"]
    assert error_code(fetch(api, url)) == "RESULT_EXPIRED"
    assert api.post(f"{UPSCALE}/{task_id}/delete", auth).status_code == 200  # again: fine
