"""The file store interface on the data dir and on S3 alike: a blob exists only once
committed, an aborted upload leaves nothing, ranged reads, deletes that take unfinished
uploads with them, spooled copies for the engine, and what the janitor finds stale. On S3:
uploads stream as multipart uploads in flat memory, and presigned links expire in time."""

from __future__ import annotations

import asyncio
import os
import shutil
import tracemalloc
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from service.store.files import LocalFileStore
from service.store.s3 import PART_BYTES, S3FileStore

FOREVER_MS = 2**62


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["local", "s3"])
def files(request, tmp_path):
    if request.param == "local":
        return LocalFileStore(tmp_path / "data")
    env = request.getfixturevalue("s3_env")
    return S3FileStore(
        env["AVATAR_S3_BUCKET"],
        prefix=env["AVATAR_S3_PREFIX"],
        endpoint_url=env["AVATAR_S3_ENDPOINT_URL"],
        spool=tmp_path / "spool",
        presigned=True,
    )


def leftovers(files, tmp_path, request) -> list[str]:
    """Everything the store holds: files of the data dir, or objects and unfinished uploads
    under the test's prefix."""
    if isinstance(files, LocalFileStore):
        root = tmp_path / "data"
        return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    server = request.getfixturevalue("s3_server")
    return server.keys(files.object_key("x")[:-1])


async def stream(writer, size: int, chunk: int = 256 * 1024) -> None:
    block = os.urandom(chunk)
    for start in range(0, size, chunk):
        await writer.write(block[: min(chunk, size - start)])


@pytest.mark.parametrize("size", [10_000, PART_BYTES * 2 + 12_345])
def test_a_blob_exists_once_committed_and_reads_by_range(files, size):
    async def scenario():
        data = os.urandom(size)
        writer = files.writer("uploads/tsk_a.mp4")
        for start in range(0, size, 1 << 20):
            await writer.write(data[start : start + (1 << 20)])
        assert await files.size("uploads/tsk_a.mp4") is None  # not before the commit
        assert await writer.commit() == size
        assert await files.size("uploads/tsk_a.mp4") == size
        part = b"".join([c async for c in files.read("uploads/tsk_a.mp4", 5, size - 7)])
        assert part == data[5 : size - 7]
        with files.local_copy("uploads/tsk_a.mp4") as path:
            assert path.read_bytes() == data

    run(scenario())


@pytest.mark.parametrize("size", [10_000, PART_BYTES * 2 + 1])
def test_an_aborted_upload_leaves_nothing(files, size, tmp_path, request):
    async def scenario():
        writer = files.writer("uploads/tsk_b.mp4")
        await stream(writer, size)
        await writer.abort()
        await writer.abort()  # twice is fine

    run(scenario())
    assert leftovers(files, tmp_path, request) == []


def test_deletes_take_unfinished_uploads_along(files, tmp_path, request):
    """A blob's delete removes it (once or twice); an upload whose writer died is what the
    janitor finds stale, and deleting that key leaves nothing."""

    async def scenario():
        await files.put("results/tsk_c/output.mp4", b"result")
        await files.delete("results/tsk_c/output.mp4")
        await files.delete("results/tsk_c/output.mp4")  # gone already: nothing happens
        await files.delete(None)
        stuck = files.writer("uploads/tsk_d.mp4")  # a writer that died mid-upload
        await stream(stuck, PART_BYTES + 1)
        (stale,) = await files.stale("uploads/", FOREVER_MS)  # as the janitor finds it
        assert "tsk_d.mp4" in stale
        await files.delete(stale)

    run(scenario())
    assert leftovers(files, tmp_path, request) == []


def test_local_copies_and_targets(files, tmp_path, request):
    with pytest.raises(FileNotFoundError), files.local_copy("uploads/missing.mp4"):
        pass
    with files.local_target("results/tsk_e/output.mp4") as path:
        path.write_bytes(b"made by the engine")
    with pytest.raises(RuntimeError), files.local_target("results/tsk_f/output.mp4") as path:
        path.write_bytes(b"half")
        raise RuntimeError("the engine failed")
    assert run(files.size("results/tsk_e/output.mp4")) == len(b"made by the engine")
    assert run(files.size("results/tsk_f/output.mp4")) is None
    assert not list((tmp_path / "spool").glob("*")) if (tmp_path / "spool").exists() else True
    assert run(files.stale("uploads/", FOREVER_MS)) == []
    assert leftovers(files, tmp_path, request) == ["results/tsk_e/output.mp4"] or leftovers(
        files, tmp_path, request
    ) == [files.object_key("results/tsk_e/output.mp4")]


def test_s3_uploads_stream_in_flat_memory(s3_env, tmp_path):
    files = S3FileStore(
        s3_env["AVATAR_S3_BUCKET"],
        prefix=s3_env["AVATAR_S3_PREFIX"],
        endpoint_url=s3_env["AVATAR_S3_ENDPOINT_URL"],
        spool=tmp_path,
    )
    size = PART_BYTES * 12

    async def scenario() -> int:
        writer = files.writer("uploads/tsk_big.mp4")
        tracemalloc.start()
        try:
            await stream(writer, size, chunk=1 << 20)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert await writer.commit() == size
        return peak

    peak = run(scenario())
    # A part filling, a part on its way and the client's copies of it: a few parts whatever
    # the upload's size (here half of it).
    assert peak < 6 * PART_BYTES, peak
    assert run(files.size("uploads/tsk_big.mp4")) == size


def test_presigned_links_serve_the_blob_and_expire_in_time(files):
    if isinstance(files, LocalFileStore):
        assert files.direct_link("results/x/output.mp4", 10_000, 0) is None
        return
    run(files.put("results/tsk_g/output.mp4", b"0123456789"))
    link = files.direct_link("results/tsk_g/output.mp4", expires_ms=95_500, now_ms=5_000)
    assert parse_qs(urlsplit(link).query)["X-Amz-Expires"] == ["90"]  # never past the limit
    answer = httpx.get(link, headers={"Range": "bytes=2-4"})
    assert (answer.status_code, answer.content) == (206, b"234")
    assert files.direct_link("results/tsk_g/output.mp4", expires_ms=5_900, now_ms=5_000) is None


def test_only_a_disk_bounds_the_room_for_new_blobs(files, tmp_path):
    """The data dir answers its file system's free space (the 507 guard of uploads counts
    it); a bucket has no such bound and answers None, so that guard never refuses for it."""
    free = files.free_bytes()
    if isinstance(files, LocalFileStore):
        disk = shutil.disk_usage(tmp_path).free
        assert free > 0 and abs(free - disk) < 64 * 1024 * 1024  # others write meanwhile
    else:
        assert free is None
