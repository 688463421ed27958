"""What the public pages show: stored records in, (HTTP status, HTML) out.

Every value that comes from a user (agent name, greeting, ids) is HTML-escaped on its way into
a template; only fragments built here from escaped parts are inserted as they are."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from string import Template
from typing import NamedTuple
from urllib.parse import urlsplit

import msgspec

from service.domain.avatars import avatar_face, find_avatar, has_image
from service.domain.context import Context
from service.domain.links import route_link, session_link
from service.domain.models import Avatar
from service.domain.turns import MAX_MESSAGE_CHARS
from service.domain.visemes import MOUTH, OPENING
from service.pages.assets import ASSETS

_TEMPLATES = Path(__file__).parent / "templates"

# The page's scripts, in the order they run: the speech helpers and the socket client
# before the page that uses them.
_SCRIPTS = ("speech.js", "face.js", "live.js", "pages.js")
# The mouth model the face is drawn from (one table, shared with the talking-video task).
_MOUTH = escape(json.dumps({name: list(shape) for name, shape in MOUTH.items()}))
_OPENING = escape(json.dumps(OPENING))

_PLACEHOLDER = (
    '<svg class="placeholder" viewBox="0 0 100 100" role="img" aria-label="{label}">'
    '<circle cx="50" cy="38" r="18" fill="currentColor" opacity="0.45"/>'
    '<path d="M16 92c4-20 18-30 34-30s30 10 34 30z" fill="currentColor" opacity="0.45"/></svg>'
)

_ERRORS = {
    "unknown_route": (404, "This link does not exist", "Check that the address is complete."),
    "inactive_route": (
        410,
        "This link is no longer active",
        "It was revoked or has expired. Ask whoever shared it for a new one.",
    ),
    "unknown_session": (404, "This session does not exist", "Check that the address is complete."),
    "ended_session": (410, "This session has ended", "Start a new session to talk again."),
}


def _template(name: str) -> Template:
    return Template((_TEMPLATES / name).read_text(encoding="utf-8"))


_BASE = _template("base.html")
_CONVERSATION = _template("conversation.html")
_ERROR = _template("error.html")


def _prefix(base_url: str) -> str:
    """The path under which the service is mounted (from AVATAR_INTERACTIVE_URL), so links
    to the stylesheet, script and images keep working behind a proxy with a path prefix."""
    return escape(urlsplit(base_url).path.rstrip("/"))


def _document(base_url: str, title: str, page_class: str, content: str, head: str = "") -> str:
    return _BASE.substitute(
        title=escape(title),
        head=head,
        static=_prefix(base_url) + "/static",
        css_version=ASSETS["pages.css"].version,
        page_class=page_class,
        content=content,
    )


class Portrait(NamedTuple):
    html: str
    face: str  # the face's landmarks as JSON (escaped for an attribute), "" without a face


async def _portrait(ctx: Context, base_url: str, avatar: Avatar | None, label: str) -> Portrait:
    """The avatar's image, and where its face is for the canvas that animates it (face.js);
    the placeholder when there is no avatar or its image is gone."""
    if avatar is None or not await has_image(ctx, avatar.avatar_id):
        return Portrait(_PLACEHOLDER.format(label=escape(label)), "")
    src = f"{_prefix(base_url)}/avatars/{escape(avatar.avatar_id)}.png"
    face = await avatar_face(ctx, avatar)
    landmarks = "" if face is None else escape(msgspec.json.encode(face).decode())
    return Portrait(f'<img src="{src}" alt="{escape(label)}">', landmarks)


def error_page(kind: str, base_url: str) -> tuple[int, str]:
    status, heading, message = _ERRORS[kind]
    content = _ERROR.substitute(status=status, heading=escape(heading), message=escape(message))
    return status, _document(base_url, heading, "error", content)


def _conversation_page(base_url: str, title: str, path: str, portrait: Portrait) -> str:
    """The conversation UI of a route's or a session's page at `path` (`/r/<id>` or
    `/i/<id>`): the script talks over the socket at `path/ws` (asking for speech), and asks
    `path` itself whether the link still admits anyone when a socket drops."""
    prefix = _prefix(base_url)
    content = _CONVERSATION.substitute(
        portrait=portrait.html,
        face=portrait.face,
        name=escape(title),
        socket_path=f"{prefix}{path}/ws?speech=1",
        mouth=_MOUTH,
        opening=_OPENING,
        link_path=f"{prefix}{path}",
        max_chars=MAX_MESSAGE_CHARS,
        max_label=f"{MAX_MESSAGE_CHARS:,}",
    )
    scripts = "\n".join(
        f'<script src="{prefix}/static/{name}?v={ASSETS[name].version}" defer></script>'
        for name in _SCRIPTS
    )
    head = f'<link rel="canonical" href="{escape(base_url)}{path}">\n{scripts}'
    return _document(base_url, title, "conversation", content, head)


async def route_page(ctx: Context, route_id: str, base_url: str) -> tuple[int, str]:
    """An active route's conversation page; 404 for an unknown id, 410 once inactive."""
    link = await route_link(ctx, route_id)
    if link.state != "active":
        return error_page(f"{link.state}_route", base_url)
    agent = link.agent
    avatar = None if agent.avatar_id is None else await find_avatar(ctx, agent.avatar_id)
    portrait = await _portrait(ctx, base_url, avatar, agent.name)
    return 200, _conversation_page(base_url, agent.name, f"/r/{escape(route_id)}", portrait)


async def session_page(ctx: Context, session_id: str, base_url: str) -> tuple[int, str]:
    """A session's conversation page: it shows "connecting" until the socket says the session
    is ready; 404 for an unknown id, 410 once stopped."""
    link = await session_link(ctx, session_id)
    if link.state != "open":
        return error_page(f"{link.state}_session", base_url)
    session = link.session
    avatar = await find_avatar(ctx, session.avatar_id)
    title = (avatar.name if avatar else None) or "Avatar session"
    portrait = await _portrait(ctx, base_url, avatar, title)
    return 200, _conversation_page(base_url, title, f"/i/{escape(session_id)}", portrait)
