"""Sessions as the API answers with them: each with its avatar's name (one store read for a
whole list), and what a client other than the page needs to join one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.domain.avatars import avatar_names
from service.domain.context import Context
from service.domain.models import Session
from service.domain.sessions import open_sessions, owned_session, session_token, start_session


@dataclass(frozen=True)
class NamedSession:
    session: Session
    avatar_name: str | None  # None once the avatar is deleted (or when it has no name)


async def named(ctx: Context, sessions: list[Session]) -> list[NamedSession]:
    names = await avatar_names(ctx, [session.avatar_id for session in sessions])
    return [NamedSession(s, names.get(s.avatar_id)) for s in sessions]


async def start_named_session(
    ctx: Context, owner_id: str, params: dict[str, Any]
) -> tuple[NamedSession, str]:
    """A new session (see `sessions.start_session`) and its socket token."""
    session = await start_session(ctx, owner_id, params)
    [started] = await named(ctx, [session])
    return started, session_token(ctx, session.session_id)


async def open_named_sessions(ctx: Context, owner_id: str) -> list[NamedSession]:
    return await named(ctx, await open_sessions(ctx, owner_id))


async def owned_named_session(ctx: Context, owner_id: str, session_id: str) -> NamedSession:
    [found] = await named(ctx, [await owned_session(ctx, owner_id, session_id)])
    return found


@dataclass(frozen=True)
class SessionProfile:
    """What a client other than the page needs to join a session."""

    named: NamedSession
    session_token: str
    models: tuple[str, ...]  # the interactive models this service offers


async def session_profile(ctx: Context, owner_id: str, session_id: str) -> SessionProfile:
    found = await owned_named_session(ctx, owner_id, session_id)
    token = session_token(ctx, session_id)
    return SessionProfile(found, token, tuple(ctx.settings.models))
