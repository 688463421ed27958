"""The public pages /r/{route_id} and /i/{session_id}, their status endpoint, headers
and static files."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest

from service.settings import SettingsError, load_settings


class _Links(HTMLParser):
    """Collects the href/src of every element, the form controls (tag, id) and the
    conversation's data attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.controls: list[tuple[str, str | None]] = []
        self.data: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("href", "src") and value]
        if tag in ("input", "textarea", "button", "form", "select"):
            self.controls.append((tag, dict(attrs).get("id")))
        self.data.update((name, value) for name, value in attrs if name.startswith("data-"))


def parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def assert_page_headers(response, frame_ancestors: str = "*") -> None:
    policy = response.headers["content-security-policy"]
    assert f"frame-ancestors {frame_ancestors}" in policy
    assert "script-src 'self'" in policy
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "x-frame-options" not in response.headers


def assert_html(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert_page_headers(response)
    html = response.text
    assert '<meta name="viewport"' in html
    return html


@pytest.fixture
def published(api, alice) -> dict:
    avatar = api.avatar(alice)
    agent = api.agent(
        alice, name="Ada", greeting="Hello! Ask me anything.", avatar_id=avatar["avatar_id"]
    )
    route = api.route(alice, agent["agent_id"])
    return {"avatar": avatar, "agent": agent, "route": route}


def start_session(api, auth: dict) -> dict:
    avatar = api.avatar(auth)
    response = api.post(
        "/v1/interactive/start_session", auth, json={"avatar_id": avatar["avatar_id"]}
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]["session"]


# Routes


def test_route_page_is_the_conversation_ui(api, published):
    route_id = published["route"]["id"]
    html = assert_html(api.get(f"/r/{route_id}"), 200)
    assert "<title>Ada</title>" in html
    assert '<h1 class="name">Ada</h1>' in html
    assert 'data-state="connecting"' in html  # until the socket says it is ready
    page = parse(html)
    assert f"/avatars/{published['avatar']['avatar_id']}.png" in page.links
    assert page.controls == [
        ("button", "sound"), ("form", "composer"), ("textarea", "message"),
        ("button", "mic"), ("button", "send"),
    ]  # fmt: skip
    assert page.data["data-socket"] == f"/r/{route_id}/ws?speech=1"
    assert page.data["data-link"] == f"/r/{route_id}"
    assert page.data["data-max-chars"] == "4000"
    scripts = [link.partition("?")[0] for link in page.links if ".js?" in link]
    assert scripts == [
        "/static/speech.js",
        "/static/face.js",
        "/static/live.js",
        "/static/pages.js",
    ]
    # The greeting comes over the socket, as the first message of the conversation.
    assert "Hello! Ask me anything." not in html


def test_every_link_of_a_page_is_served(api, published):
    page = parse(api.get(f"/r/{published['route']['id']}").text)
    # (The icon is an empty data: URL, so browsers do not ask for /favicon.ico.)
    for link in (link for link in page.links if not link.startswith("data:")):
        path = re.sub(r"^https?://[^/]+", "", link)
        assert api.get(path).status_code == 200, link


def test_route_page_without_avatar_shows_a_placeholder(api, alice):
    agent = api.agent(alice, name="Plain")
    html = assert_html(api.get(f"/r/{api.route(alice, agent['agent_id'])['id']}"), 200)
    assert '<svg class="placeholder"' in html
    assert "<img" not in html
    assert 'class="message' not in html  # no greeting configured


def test_user_text_is_escaped(api, alice):
    name = '<script>alert("n")</script>'
    agent = api.agent(alice, name=name, greeting="<img src=x onerror=alert('g')>")
    html = api.get(f"/r/{api.route(alice, agent['agent_id'])['id']}").text
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;n&quot;)&lt;/script&gt;" in html


def test_unknown_route_is_a_404_page(api):
    html = assert_html(api.get("/r/rt_doesnotexist"), 404)
    assert "does not exist" in html


def test_revoked_route_is_a_410_page(api, alice, published):
    route_id = published["route"]["id"]
    assert api.post(f"/v1/agent-routes/{route_id}/revoke", alice).status_code == 200
    html = assert_html(api.get(f"/r/{route_id}"), 410)
    assert "no longer active" in html
    assert "Ada" not in html


def test_head_of_a_page_tells_the_script_whether_its_link_still_admits_anyone(
    api, alice, published
):
    route_id = published["route"]["id"]
    session_id = start_session(api, alice)["session_id"]
    for path in (f"/r/{route_id}", f"/i/{session_id}"):
        response = api.client.head(path)
        assert (response.status_code, response.content) == (200, b"")
    api.post(f"/v1/agent-routes/{route_id}/revoke", alice)
    api.post("/v1/interactive/stop_sessions", alice, json={"session_ids": [session_id]})
    for path in (f"/r/{route_id}", f"/i/{session_id}"):
        assert api.client.head(path).status_code == 410
    assert api.client.head("/r/rt_unknown").status_code == 404


def test_route_page_closes_the_instant_the_route_expires(api, alice):
    agent = api.agent(alice)
    route = api.route(alice, agent["agent_id"], validity_seconds=60)
    api.clock.advance(59.999)
    assert_html(api.get(f"/r/{route['id']}"), 200)
    api.clock.advance(0.001)
    assert "no longer active" in assert_html(api.get(f"/r/{route['id']}"), 410)


def test_deleting_the_agent_closes_its_pages(api, alice, published):
    agent_id = published["agent"]["agent_id"]
    assert api.post(f"/v1/agents/{agent_id}/delete", alice).status_code == 200
    assert_html(api.get(f"/r/{published['route']['id']}"), 410)


def test_page_links_use_the_interactive_url(make_api):
    api = make_api(interactive_url="https://avatars.example.com/talk")
    auth = api.key()
    agent = api.agent(auth)
    route = api.route(auth, agent["agent_id"])
    assert route["url"] == f"https://avatars.example.com/talk/r/{route['id']}"
    page = parse(api.get(f"/r/{route['id']}").text)
    assert route["url"] in page.links  # the canonical link
    assert any(link.startswith("/talk/static/pages.css?v=") for link in page.links)
    assert any(link.startswith("/talk/static/pages.js?v=") for link in page.links)
    assert page.data["data-socket"] == f"/talk/r/{route['id']}/ws?speech=1"


# Headers


def test_frame_ancestors_is_configurable(make_api):
    api = make_api(frame_ancestors="'self' https://embed.example")
    response = api.get("/r/rt_unknown")
    assert_page_headers(response, "'self' https://embed.example")


@pytest.mark.parametrize("value", ["*; script-src *", "a,b", "x\x00y", "  "])
def test_frame_ancestors_cannot_inject_directives(value):
    with pytest.raises(SettingsError, match="AVATAR_FRAME_ANCESTORS"):
        load_settings({"AVATAR_FRAME_ANCESTORS": value})


def test_status_endpoint_has_the_page_headers(api, alice):
    session = start_session(api, alice)
    for path in (f"/i/{session['session_id']}/status", "/i/ses_unknown/status"):
        assert_page_headers(api.get(path))


# Sessions


def test_session_page_is_the_conversation_ui_and_the_status_is_public(make_api, wait_until):
    api = make_api(session_warmup_s=5)
    auth = api.key()
    session_id = start_session(api, auth)["session_id"]
    status_path = f"/i/{session_id}/status"

    html = assert_html(api.get(f"/i/{session_id}"), 200)
    assert 'data-state="connecting"' in html and "Connecting…" in html
    assert '<h1 class="name">Avatar session</h1>' in html  # the avatar has no name
    page = parse(html)
    assert page.data["data-socket"] == f"/i/{session_id}/ws?speech=1"
    assert ("textarea", "message") in page.controls
    for script in (link for link in page.links if ".js?" in link):
        assert api.get(script).status_code == 200
    status = api.get(status_path)
    assert status.status_code == 200
    assert status.json() == {"data": {"session_id": session_id, "status": "starting"}}

    api.clock.advance(5)
    wait_until(lambda: api.get(status_path).json()["data"]["status"] == "ready")
    assert_html(api.get(f"/i/{session_id}"), 200)


def test_session_page_shows_the_avatar_name(api, alice):
    avatar = api.avatar(alice, name="Nova")
    body = {"avatar_id": avatar["avatar_id"]}
    started = api.post("/v1/interactive/start_session", alice, json=body).json()["data"]
    html = assert_html(api.get(f"/i/{started['session']['session_id']}"), 200)
    assert "<title>Nova</title>" in html and '<h1 class="name">Nova</h1>' in html
    assert f"/avatars/{avatar['avatar_id']}.png" in parse(html).links


def test_stopped_session_is_a_410_page(api, alice):
    session_id = start_session(api, alice)["session_id"]
    body = {"session_ids": [session_id]}
    assert api.post("/v1/interactive/stop_sessions", alice, json=body).status_code == 200
    assert "has ended" in assert_html(api.get(f"/i/{session_id}"), 410)
    assert api.get(f"/i/{session_id}/status").json()["data"]["status"] == "stopped"


def test_session_page_closes_at_the_maximum_duration(make_api):
    api = make_api(session_max_s=30)
    session_id = start_session(api, api.key())["session_id"]
    api.clock.advance(30)
    assert_html(api.get(f"/i/{session_id}"), 410)


def test_unknown_session(api):
    assert "does not exist" in assert_html(api.get("/i/ses_unknown"), 404)
    response = api.get("/i/ses_unknown/status")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


# Static files


def test_static_files_are_cached_by_version(api, alice):
    session_id = start_session(api, alice)["session_id"]
    page = parse(api.get(f"/i/{session_id}").text)
    for link in page.links:
        if link.startswith("/static/"):
            response = api.get(link)
            assert response.status_code == 200
            assert "immutable" in response.headers["cache-control"]
            assert response.headers["content-type"].split(";")[0] in ("text/css", "text/javascript")
    unversioned = api.get("/static/pages.js")
    assert "immutable" not in unversioned.headers["cache-control"]
    assert api.get("/static/nope.js").status_code == 404


# The same on a real `serve` with two HTTP workers: the warm-up is derived from stored times,
# so whichever worker answers a poll agrees.


@pytest.fixture
def served(start_serve):
    server = start_serve(
        AVATAR_SESSION_WARMUP_S="1.5",
        AVATAR_HTTP_WORKERS="2",
        AVATAR_FRAME_ANCESTORS="https://embed.example",
    )
    return server.base, server.auth


@pytest.mark.slow
def test_session_page_on_a_real_server(served, png_bytes, poll):
    base, auth = served
    files = {"image": ("face.png", png_bytes(), "image/png")}
    avatar = httpx.post(f"{base}/v1/avatars", headers=auth, files=files).json()["data"]
    body = {"avatar_id": avatar["avatar_id"]}
    started = httpx.post(f"{base}/v1/interactive/start_session", headers=auth, json=body)
    session = started.json()["data"]["session"]

    page = httpx.get(session["client_url"])
    assert page.status_code == 200 and 'data-state="connecting"' in page.text
    assert "frame-ancestors https://embed.example" in page.headers["content-security-policy"]
    assert "x-frame-options" not in page.headers
    assert page.headers["referrer-policy"] == "no-referrer"
    status_url = f"{session['client_url']}/status"
    seen = []
    poll(lambda: seen.append(httpx.get(status_url).json()["data"]["status"]) or "ready" in seen)
    assert seen[0] == "starting" and seen[-1] == "ready"
    assert httpx.get(session["client_url"]).status_code == 200

    stop = {"session_ids": [session["session_id"]]}
    httpx.post(f"{base}/v1/interactive/stop_sessions", headers=auth, json=stop)
    assert httpx.get(session["client_url"]).status_code == 410
