"""Interactive sessions. Status is derived from stored times (see `Session.status`), so every
HTTP worker answers alike and no worker has to sleep through the warm-up."""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
from typing import Any

import msgspec
from PIL import Image

from service.domain.agents import check_avatar_ref, check_model, check_tools
from service.domain.context import Context
from service.domain.errors import ValidationFailed
from service.domain.files import avatar_key
from service.domain.ids import new_id
from service.domain.models import Session, UsageRecord
from service.domain.ownership import require_owned
from service.domain.pagination import MAX_UNPAGED, UNPAGED
from service.domain.voices import check_voice_ref

log = logging.getLogger("service.sessions")

MAX_STOP_IDS = 100
DEFAULT_IDLE_TIMEOUT_MIN = 15
MAX_IDLE_TIMEOUT_MIN = 1440
_TOKEN_CONTEXT = b"session-token:"


def session_token(ctx: Context, session_id: str) -> str:
    """The session's second capability (192 bits), for socket clients other than its page.
    Derived from the signing key, so it is never stored and can be shown again."""
    digest = hmac.new(ctx.signing_key, _TOKEN_CONTEXT + session_id.encode(), "sha256").digest()
    return "st_" + base64.urlsafe_b64encode(digest[:24]).decode()


def session_token_matches(ctx: Context, session_id: str, token: str) -> bool:
    return hmac.compare_digest(session_token(ctx, session_id).encode(), token.encode())


def _idle_timeout(minutes: int | None) -> int | None:
    """Minutes of idleness that stop the session; None for `-1` (never)."""
    if minutes is None:
        return DEFAULT_IDLE_TIMEOUT_MIN
    if minutes == -1:
        return None
    if not 1 <= minutes <= MAX_IDLE_TIMEOUT_MIN:
        raise ValidationFailed.field(
            "idle_timeout", f"must be -1 (never) or 1 to {MAX_IDLE_TIMEOUT_MIN} minutes"
        )
    return minutes


def _tools(tools: Any) -> Any:
    """Tools as given, or decoded from the JSON string the hosted API's schema sends."""
    if isinstance(tools, str):
        try:
            tools = msgspec.json.decode(tools)
        except (msgspec.DecodeError, RecursionError):
            raise ValidationFailed.field("tools", "is a string but not JSON") from None
        if not isinstance(tools, (dict, list)):
            raise ValidationFailed.field("tools", "must hold a JSON object or array")
    check_tools(tools)
    return tools


def one_of(values: dict[str, Any], missing: Any = None) -> Any:
    """The value given under either spelling (`missing`: not given); two different values are
    refused."""
    given = {name: value for name, value in values.items() if value is not missing}
    if len(set(map(repr, given.values()))) > 1:
        names = " and ".join(given)
        raise ValidationFailed(
            f"{names} are two spellings of one parameter and disagree; send one of them.",
            [{"field": name, "message": "conflicts with " + names} for name in given],
        )
    return next(iter(given.values()), missing)


async def start_session(ctx: Context, owner_id: str, params: dict[str, Any]) -> Session:
    """Record a new `starting` session and begin preparing it in the background."""
    voice = one_of({"voice_profile_id": params["voice_profile_id"], "voice_id": params["voice_id"]})
    instruction = one_of(
        {"instruction": params["instruction"], "instructions": params["instructions"]}
    )
    model = params["model"] or ctx.settings.models[0]
    check_model(ctx, model)
    tools = _tools(params["tools"])
    idle_timeout = _idle_timeout(params["idle_timeout"])
    await check_avatar_ref(ctx, owner_id, params["avatar_id"])
    voice_field = "voice_id" if params["voice_profile_id"] is None else "voice_profile_id"
    await check_voice_ref(ctx, owner_id, voice, voice_field)
    now = ctx.clock.now_ms()
    session = Session(
        session_id=new_id("ses"),
        owner_id=owner_id,
        avatar_id=params["avatar_id"],
        model=model,
        created_ms=now,
        max_end_ms=now + round(ctx.settings.session_max_s * 1000),
        voice_id=voice,
        llm_model=params["llm_model"],
        instruction=instruction,
        tools=tools,
        idle_timeout_min=idle_timeout,
        use_beta=bool(params["use_beta"]),
    )
    await ctx.store.add_session(session)
    ctx.spawn(prepare_session(ctx, session))
    return session


def _preparation_problem(ctx: Context, session: Session) -> str | None:
    """Load what the session needs; a reason it cannot run, or None."""
    try:
        with ctx.files.local_copy(avatar_key(session.avatar_id)) as path, Image.open(path) as image:
            image.verify()
    except (OSError, ValueError, SyntaxError):
        return f"the image of avatar {session.avatar_id} cannot be loaded"
    # The language-model backend is either the configured OpenAI-compatible base URL (checked
    # when the settings load) or the built-in offline responder; both can serve a session,
    # and a failing backend shows the visitor an error message rather than a dead page.
    return None


async def prepare_session(ctx: Context, session: Session) -> None:
    """Make the session ready, no sooner than its warm-up after start (or stop it on error)."""
    problem = await asyncio.to_thread(_preparation_problem, ctx, session)
    now = ctx.clock.now_ms()
    if problem is not None:
        log.warning("session %s failed to prepare: %s", session.session_id, problem)
        await close_session(ctx, session, now, "error")
        return
    warm_until = session.created_ms + round(ctx.settings.session_warmup_s * 1000)
    await ctx.store.mark_session_ready(session.session_id, max(now, warm_until))


def session_usage(session: Session, stopped_ms: int) -> UsageRecord:
    seconds = round(max(0, stopped_ms - session.created_ms) / 1000, 3)
    return UsageRecord(
        new_id("usg"),
        session.owner_id,
        "session",
        session.session_id,
        session.created_ms,
        stopped_ms,
        seconds,
        seconds,
    )


async def close_session(ctx: Context, session: Session, stopped_ms: int, reason: str) -> bool:
    """Stop the session and record its usage; False if it was already stopped."""
    stopped_ms = min(stopped_ms, session.max_end_ms)
    usage = session_usage(session, stopped_ms)
    return await ctx.store.stop_session(session.session_id, stopped_ms, reason, usage)


async def owned_session(ctx: Context, owner_id: str, session_id: str) -> Session:
    session = await ctx.store.get_session(session_id)
    return require_owned(session, owner_id, "session", session_id)


async def find_session(ctx: Context, session_id: str) -> Session | None:
    """Any owner's session by id (the public page: the id is the credential)."""
    return await ctx.store.get_session(session_id)


async def open_sessions(ctx: Context, owner_id: str) -> list[Session]:
    """The caller's starting and ready sessions, newest first (at most MAX_UNPAGED)."""
    rows = await ctx.store.list_open_sessions(owner_id, UNPAGED, now_ms=ctx.clock.now_ms())
    return rows[:MAX_UNPAGED]


async def _stop_one(ctx: Context, owner_id: str, session_id: str) -> str:
    session = await ctx.store.get_session(session_id)
    if session is None or session.owner_id != owner_id:
        return "not_found"
    now = ctx.clock.now_ms()
    if session.stopped_ms is not None:
        return "already_stopped"
    if now >= session.max_end_ms:  # timed out, not yet swept: close it as the sweeper would
        await close_session(ctx, session, session.max_end_ms, "max_duration")
        return "already_stopped"
    return "stopped" if await close_session(ctx, session, now, "api") else "already_stopped"


async def stop_sessions(ctx: Context, owner_id: str, session_ids: list[str]) -> dict[str, list]:
    outcome: dict[str, list] = {"stopped": [], "already_stopped": [], "not_found": []}
    for session_id in dict.fromkeys(session_ids):
        outcome[await _stop_one(ctx, owner_id, session_id)].append(session_id)
    return outcome


async def sweep(ctx: Context, batch: int = 500) -> int:
    """Close sessions past their maximum duration or idle timeout, and prepare orphaned ones;
    returns how many sessions were touched. Run periodically by the one sweeper of `serve`."""
    now = ctx.clock.now_ms()
    touched = 0
    for session in await ctx.store.sessions_past_max(now, batch):
        touched += await close_session(ctx, session, session.max_end_ms, "max_duration")
    for session in await ctx.store.idle_sessions(now, batch):
        idle_since = session.last_active_ms or session.created_ms
        stop_at = idle_since + session.idle_timeout_min * 60_000
        touched += await close_session(ctx, session, stop_at, "idle")
    # A worker that died between start and preparation leaves a session without ready_at.
    for session in await ctx.store.unprepared_sessions(now - 30_000, batch):
        await prepare_session(ctx, session)
        touched += 1
    return touched
