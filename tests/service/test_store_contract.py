"""What the store interface promises where processes (and nodes) race, on SQLite and on
PostgreSQL alike: each claim hands a task to one claimer, a compare-and-set has one winner,
admissions respect the queue limit and the Idempotency-Key, deliveries are claimed once, a
session or conversation is closed (and billed) once, changes wake the waiters of another
store, and avatars keep the face found in them."""

from __future__ import annotations

import asyncio
import time

import msgspec

from service.domain.faces import FaceLandmarks, Point
from service.domain.models import (
    Admission,
    Avatar,
    Conversation,
    Delivery,
    IdempotencyKey,
    Message,
    Owner,
    Session,
    SocketHold,
    UsageFilter,
    UsageRecord,
    VoiceProfile,
    WebhookOutcome,
    WebhookTarget,
)
from service.domain.pagination import PageRequest
from service.domain.tasks import COMPLETED, IN_PROGRESS, move, new_task

CLAIMERS = 4


def run(coro):
    return asyncio.run(coro)


async def stores(open_store, count: int) -> list:
    opened = [await open_store() for _ in range(count)]
    await opened[0].add_owner(Owner("own_1", "alice", 0))
    return opened


async def close(opened: list) -> None:
    for store in opened:
        await store.close()


def task(n: int):
    return new_task(f"tsk_{n:03d}", "own_1", "upscale", {"n": n}, 1000 + n)


async def queue(store, count: int) -> None:
    for n in range(count):
        admission, _ = await store.add_task(task(n), None, queue_limit=1000, remembered_since_ms=0)
        assert admission is Admission.CREATED


def test_each_task_is_claimed_once_oldest_first(open_store):
    async def claim_all(store, worker: str) -> list[str]:
        claimed = []
        while True:
            started = await store.claim_task(
                worker, 10_000, lambda t: move(t, IN_PROGRESS, 2000), ("upscale",)
            )
            if started is None:
                return claimed
            assert (started.status, started.worker_id, started.lease_until_ms) == (
                IN_PROGRESS, worker, 10_000,
            )  # fmt: skip
            claimed.append(started.task_id)

    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            await queue(opened[0], 40)
            claims = await asyncio.gather(
                *(claim_all(store, f"wrk_{n}") for n, store in enumerate(opened))
            )
            everyone = [task_id for claimed in claims for task_id in claimed]
            assert sorted(everyone) == [f"tsk_{n:03d}" for n in range(40)]
            assert all(claimed == sorted(claimed) for claimed in claims)  # oldest first
            assert await opened[0].claim_task("late", 1, lambda t: t, None) is None
        finally:
            await close(opened)

    run(scenario())


def test_a_compare_and_set_has_one_winner(open_store):
    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            await queue(opened[0], 1)
            stored = await opened[0].get_task("tsk_000")
            rivals = [
                msgspec.structs.replace(stored, version=stored.version + 1, progress=n / 10)
                for n in range(len(opened))
            ]
            saved = await asyncio.gather(
                *(
                    store.save_task(r, stored.version)
                    for store, r in zip(opened, rivals, strict=True)
                )
            )
            assert sorted(saved) == [False] * (len(opened) - 1) + [True]
            winner = rivals[saved.index(True)]
            assert await opened[1].get_task("tsk_000") == winner
        finally:
            await close(opened)

    run(scenario())


def test_admissions_race_to_the_queue_limit_and_one_key(open_store):
    async def submit(store, n: int, key: str | None):
        idempotency = None if key is None else IdempotencyKey(key, "fp")
        return await store.add_task(task(n), idempotency, queue_limit=5, remembered_since_ms=0)

    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            repeats = await asyncio.gather(
                *(submit(store, n, "same-key") for n, store in enumerate(opened))
            )
            outcomes = sorted(admission.value for admission, _ in repeats)
            assert outcomes == ["created"] + ["repeated"] * (len(opened) - 1)
            assert len({t.task_id for _, t in repeats}) == 1  # all answered with the first
            crowd = await asyncio.gather(
                *(submit(opened[n % len(opened)], 10 + n, None) for n in range(12))
            )
            created = [t for admission, t in crowd if admission is Admission.CREATED]
            assert len(created) == 4  # the limit is 5, one was queued already
            assert {a for a, _ in crowd} == {Admission.CREATED, Admission.QUEUE_FULL}
            reused = await opened[0].add_task(
                task(99), IdempotencyKey("same-key", "other"), queue_limit=99, remembered_since_ms=0
            )
            assert reused == (Admission.KEY_REUSED, None)
        finally:
            await close(opened)

    run(scenario())


def test_a_final_status_writes_its_delivery_and_usage_and_each_delivery_is_claimed_once(
    open_store,
):
    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            await queue(opened[0], 3)
            target = WebhookTarget("https://hooks.example/x", "token")
            for n in range(3):
                queued = await opened[0].get_task(f"tsk_{n:03d}")
                done = move(move(queued, IN_PROGRESS, 2000), COMPLETED, 3000 + n)
                usage = UsageRecord(f"use_{n}", "own_1", "upscale", done.task_id, 0, 1, 1.0, 2.0)
                delivery = Delivery(done.task_id, "own_1", target, 3000 + n)
                assert await opened[n % 2].save_task(done, queued.version, delivery, usage)
            claims = await asyncio.gather(
                *(store.claim_delivery(5000, 6000) for store in opened * 2)
            )
            claimed = [d for d in claims if d is not None]
            assert sorted(d.task_id for d in claimed) == ["tsk_000", "tsk_001", "tsk_002"]
            assert all(d.target == target and d.attempts == 1 for d in claimed)
            assert await opened[0].claim_delivery(5500, 7000) is None  # claims still live
            await opened[1].record_delivery("tsk_000", WebhookOutcome(True, 5100, 200), 5100)
            assert await opened[0].release_delivery_claims() == 2
            again = await opened[2].claim_delivery(5600, 7000)
            assert (again.task_id, again.attempts) == ("tsk_001", 2)
            totals = await opened[3].usage_totals("own_1", UsageFilter(0, 10_000))
            assert totals.upscale_billable_seconds == 6.0
            stored = await opened[2].get_task("tsk_000")
            assert stored.webhook_outcome == WebhookOutcome(True, 5100, 200)
        finally:
            await close(opened)

    run(scenario())


def test_a_session_and_its_conversation_close_once(open_store):
    def usage(kind: str, ref: str, n: int) -> UsageRecord:
        route_id = "rt_1" if kind == "route_conversation" else None
        return UsageRecord(f"use_{kind}_{n}", "own_1", kind, ref, 0, 1000, 1.0, 1.0, route_id)

    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            session = Session("ses_1", "own_1", "av_1", "metis-2.5", 0, 60_000, use_beta=True)
            await opened[0].add_session(session)
            assert (await opened[1].get_session("ses_1")) == session
            talk = Conversation("cnv_1", "own_1", 10, 10, session_id="ses_1")
            await opened[1].add_conversation(talk)
            for seq, role in enumerate(("user", "assistant", "user")):
                await opened[seq % 2].add_message(
                    Message("cnv_1", seq, role, f"m{seq}", 20 + seq), "ses_1"
                )
            assert [m.text for m in await opened[2].list_messages("cnv_1", last=2)] == ["m1", "m2"]
            assert (await opened[0].get_session("ses_1")).last_active_ms == 22
            closed = await asyncio.gather(
                *(s.close_conversation(talk, 900, "closed", usage("route_conversation", "cnv_1", n))
                  for n, s in enumerate(opened))
            )  # fmt: skip
            stopped = await asyncio.gather(
                *(s.stop_session("ses_1", 1000, "api", usage("session", "ses_1", n))
                  for n, s in enumerate(opened))
            )  # fmt: skip
            assert sorted(closed) == sorted(stopped) == [False] * (len(opened) - 1) + [True]
            records = await opened[3].list_usage("own_1", UsageFilter(0, 10_000), PageRequest(10))
            assert sorted(r.kind for r in records) == ["route_conversation", "session"]
            assert await opened[0].list_open_sessions("own_1", PageRequest(limit=5), now_ms=5) == []
            deleted = await opened[1].delete_conversation("own_1", "cnv_1", 2000)
            assert deleted.conversation_id == "cnv_1"
            assert await opened[2].list_messages("cnv_1") == []
            await opened[0].add_message(Message("cnv_1", 9, "user", "late", 2001), None)
            assert await opened[2].list_messages("cnv_1") == []  # nothing kept after a delete
        finally:
            await close(opened)

    run(scenario())


def test_changes_wake_the_waiters_and_move_the_live_mark_of_another_store(open_store):
    async def scenario():
        watcher, writer = await stores(open_store, 2)
        try:
            session = Session("ses_1", "own_1", "av_1", "metis-2.5", 0, 60_000)
            await writer.add_session(session)
            mark = watcher.live_mark()
            started = time.monotonic()
            waiting = asyncio.ensure_future(watcher.wait_for_tasks(10))
            await asyncio.sleep(0.05)
            await queue(writer, 1)
            await waiting
            assert time.monotonic() - started < 2
            await writer.stop_session(
                "ses_1", 5, "api", UsageRecord("u", "own_1", "session", "ses_1", 0, 5, 0.0, 0.0)
            )
            deadline = time.monotonic() + 1
            while watcher.live_mark() == mark:
                assert time.monotonic() < deadline, "the stop never reached the other store"
                await asyncio.sleep(0.005)
        finally:
            await close([watcher, writer])

    run(scenario())


def test_usage_is_read_by_window_kind_and_route(open_store):
    records = [
        UsageRecord("u1", "own_1", "route_conversation", "cnv_1", 0, 1000, 1.0, 1.0, "rt_1"),
        UsageRecord("u2", "own_1", "route_conversation", "cnv_2", 0, 2000, 2.0, 2.0, "rt_2"),
        UsageRecord("u3", "own_1", "session", "ses_1", 0, 3000, 4.0, 4.0),
        UsageRecord("u4", "own_1", "upscale", "tsk_1", 0, 4000, 8.0, 3.5),
        UsageRecord("u5", "own_1", "session", "ses_2", 0, 9000, 16.0, 16.0),  # outside
        UsageRecord("u6", "own_1", "image", "img_1", 0, 4500, 2.5, 2.5),
        UsageRecord("u7", "own_1", "image", "img_2", 0, 4600, 1.5, 1.5),
    ]

    async def scenario():
        [store] = await stores(open_store, 1)
        try:
            for record in records:
                await store.add_usage(record)

            async def read(which: UsageFilter):
                found = await store.list_usage("own_1", which, PageRequest(10))
                return [r.usage_id for r in found], await store.usage_totals("own_1", which)

            ids, totals = await read(UsageFilter(0, 5000))
            assert ids == ["u7", "u6", "u4", "u3", "u2", "u1"]  # newest first
            assert totals.image_count == 2  # images are counted, not timed
            assert (totals.route_conversation_seconds, totals.session_seconds) == (3.0, 4.0)
            assert totals.upscale_billable_seconds == 3.5
            ids, totals = await read(UsageFilter(0, 5000, route_id="rt_2"))
            assert (ids, totals.route_conversation_seconds, totals.session_seconds) == (
                ["u2"], 2.0, 0.0,
            )  # fmt: skip
            ids, totals = await read(UsageFilter(0, 10_000, kind="session"))
            assert (ids, totals.session_seconds, totals.route_conversation_seconds) == (
                ["u5", "u3"], 20.0, 0.0,
            )  # fmt: skip
        finally:
            await close([store])

    run(scenario())


def test_socket_holds_count_live_places_and_free_them(open_store):
    async def scenario() -> list:
        [store] = await stores(open_store, 1)
        try:

            async def hold(socket_id: str, client: str, route_id: str | None, at_ms: int):
                place = SocketHold(socket_id, client, route_id, at_ms)
                return await store.hold_socket(place, 2, 3, live_since_ms=at_ms - 60_000)

            seen = [await hold("s1", "a", "rt_1", 0), await hold("s2", "a", None, 0)]
            seen.append(await hold("s3", "a", "rt_2", 0))  # the client's cap, on any route
            seen += [await hold("s4", "b", "rt_1", 0), await hold("s5", "c", "rt_1", 0)]
            seen.append(await hold("s6", "d", "rt_1", 0))  # the route's cap
            await store.release_socket("s1")
            seen.append(await hold("s7", "a", "rt_2", 0))  # a released place is free
            await store.keep_alive(["s7"], 90_000)  # a hold unkept as a conversation, stamped
            # Places not stamped for a minute belong to a dead worker: they no longer count.
            seen.append(await hold("s8", "a", "rt_1", 90_000))
            seen.append(await hold("s9", "a", "rt_1", 90_000))
            seen.append(await store.drop_quiet_sockets(30_000))
            return seen
        finally:
            await close([store])

    assert run(scenario()) == [
        None, None, "client", None, None, "route", None, None, "client", 3
    ]  # fmt: skip


def test_holds_racing_for_the_last_places_take_each_place_once(open_store):
    """Every store (a worker, or a node) asks for places at once: a cap is never exceeded,
    and every place below it is taken."""

    async def ask(store, n: int, client: str, route_id: str):
        hold = SocketHold(f"s_{client}_{route_id}_{n}", client, route_id, 1000)
        return await store.hold_socket(hold, 3, 5, live_since_ms=0)

    async def scenario():
        opened = await stores(open_store, CLAIMERS)
        try:
            # One client on many routes: its cap (3) binds.
            by_client = await asyncio.gather(
                *(ask(store, n, "a", f"rt_{n}_{m}") for n, store in enumerate(opened)
                  for m in range(3))
            )  # fmt: skip
            # Many clients on one route: the route's cap (5) binds.
            by_route = await asyncio.gather(
                *(ask(store, n, f"c_{n}_{m}", "rt_x") for n, store in enumerate(opened)
                  for m in range(3))
            )  # fmt: skip
            return sorted(map(str, by_client)), sorted(map(str, by_route))
        finally:
            await close(opened)

    by_client, by_route = run(scenario())
    assert by_client == ["None"] * 3 + ["client"] * 9
    assert by_route == ["None"] * 5 + ["route"] * 7


def test_voice_profiles_are_kept_listed_and_deleted_with_their_users_moved(open_store):
    def profile(n: int, owner_id: str = "own_1") -> VoiceProfile:
        return VoiceProfile(
            f"vp_{n}", owner_id, f"voice {n}", None if n % 2 else "warm", ("en", "fr"),
            "espeak", "en-us", 50 + n, 40, 170, 1000 + n,
        )  # fmt: skip

    async def scenario():
        writer, other = await stores(open_store, 2)
        try:
            await writer.add_owner(Owner("own_2", "bob", 0))
            for n in range(3):
                await writer.add_voice_profile(profile(n))
            await writer.add_voice_profile(profile(9, "own_2"))
            assert await other.get_voice_profile("vp_1") == profile(1)
            assert [p.profile_id for p in await other.list_voice_profiles("own_1")] == [
                "vp_2", "vp_1", "vp_0",
            ]  # fmt: skip
            session = Session("ses_1", "own_1", "av_1", "metis-2.5", 0, 60_000, voice_id="vp_1")
            await writer.add_session(session)
            mark = other.live_mark()
            assert await other.delete_voice_profile("own_2", "vp_1", "premade") is None
            deleted = await other.delete_voice_profile("own_1", "vp_1", "premade")
            assert deleted == profile(1)
            assert await writer.get_voice_profile("vp_1") is None
            assert (await writer.get_session("ses_1")).voice_id == "premade"
            assert other.live_mark() != mark  # sessions' voices changed: live pages look again
            assert await writer.delete_voice_profile("own_1", "vp_1", "premade") is None
        finally:
            await close([writer, other])

    run(scenario())


def test_avatars_keep_their_face_and_one_looked_for_later(open_store):
    face = FaceLandmarks(
        10.5, 20, 100, 130, Point(40, 60.25), Point(80, 61), 20, Point(60, 110), 42, "box"
    )

    def avatar(n: int, **looked) -> Avatar:
        return Avatar(f"av_{n}", "own_1", None, 320, 256, "upload", 1000 + n, **looked)

    async def scenario():
        writer, other = await stores(open_store, 2)
        try:
            found, faceless, older = (
                avatar(1, face=face, face_checked=True),
                avatar(2, face_checked=True),
                avatar(3),  # stored before faces were looked for
            )
            for each in (found, faceless, older):
                await writer.add_avatar(each)
            assert await other.get_avatars(["av_1", "av_2", "av_3"]) in (
                [found, faceless, older], [older, faceless, found],
            )  # fmt: skip
            await other.set_avatar_face("av_3", face)
            assert await writer.get_avatar("av_3") == avatar(3, face=face, face_checked=True)
            listed = await writer.list_avatars("own_1", PageRequest(10, None))
            assert [a.face for a in listed] == [face, None, face]
            assert await writer.delete_avatar("own_1", "av_1") == found
        finally:
            await close([writer, other])

    run(scenario())


def test_a_build_ends_once_and_keeps_its_status_and_error(open_store):
    face = FaceLandmarks(
        150, 90, 235, 306, Point(205, 215), Point(306, 215), 47, Point(256, 308), 99, "box"
    )

    def pending(n: int) -> Avatar:
        return Avatar(f"av_{n}", "own_1", "Built", 512, 512, "upload", 1000 + n, status="PENDING")

    async def scenario():
        writer, other = await stores(open_store, 2)
        try:
            for n in (1, 2):
                await writer.add_avatar(pending(n))
            assert await other.get_avatar("av_1") == pending(1)
            assert await other.end_avatar_build("av_1", "READY", None, face)
            assert not await writer.end_avatar_build("av_1", "ERROR", "late", None)  # ended
            assert await writer.end_avatar_build("av_2", "ERROR", "No face was found.", None)
            assert not await writer.end_avatar_build("av_9", "READY", None, face)  # unknown
            ready, failed = await other.get_avatar("av_1"), await other.get_avatar("av_2")
            assert (ready.status, ready.error, ready.face, ready.face_checked) == (
                "READY", None, face, True
            )  # fmt: skip
            assert (failed.status, failed.error, failed.face) == (
                "ERROR", "No face was found.", None
            )  # fmt: skip
        finally:
            await close([writer, other])

    run(scenario())
