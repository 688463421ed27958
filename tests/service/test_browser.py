"""The conversation pages in a real headless Chromium (Debian's, driven by Playwright) against a
real `serve`, under the pages' real Content-Security-Policy: the greeting, streamed replies, the
ended states, a session's warm-up, reconnecting after a drop, the character limit, the microphone,
framing by another site, and a phone-sized screen.

A screenshot of each state goes to $AVATAR_TEST_ARTIFACTS/browser-screenshots, else to
browser-screenshots/ under pytest's base temporary directory."""

from __future__ import annotations

import io
import os
import re
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from PIL import Image, ImageDraw

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        f"browser tests need Debian's chromium at {CHROMIUM} (.ci/run installs it)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
expect, sync_playwright = sync_api.expect, sync_api.sync_playwright

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WARMUP_S = 2
# Revoking a route ends its sockets within a second; the rest is margin for a busy machine.
ENDED_WITHIN_MS = 3000
GREETING = "Hello! Ask me anything."
ECHO = "so I can only repeat what you said: "

# What Chromium logs as errors where a link has ended (the 410 page, the page's own check
# after a drop, a refused handshake) or the server is down for a moment: expected, unlike
# script errors or CSP refusals.
EXPECTED_ERRORS = re.compile(
    r"status of 410 \(Gone\)|WebSocket connection to .* failed|net::ERR_CONNECTION_REFUSED"
)

expect.set_options(timeout=10_000)


# The server, the browser and the page


@pytest.fixture(scope="module")
def server(start_serve_module):
    # Private addresses allowed: a custom agent on a closed loopback port gives a real error.
    return start_serve_module(
        AVATAR_SESSION_WARMUP_S=str(WARMUP_S), AVATAR_WEBHOOK_ALLOW_PRIVATE="1"
    )


@pytest.fixture(scope="module")
def api(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    root = os.environ.get("AVATAR_TEST_ARTIFACTS")
    base = Path(root) if root else tmp_path_factory.getbasetemp()
    folder = base / "browser-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Problems:
    """What went wrong inside the page: uncaught errors and console errors (a Content
    Security Policy refusal shows up there)."""

    def __init__(self, page) -> None:
        self.seen: list[str] = []
        page.on("pageerror", lambda error: self.seen.append(f"uncaught: {error}"))
        page.on("console", self._console)

    def _console(self, message) -> None:
        if message.type == "error" and not EXPECTED_ERRORS.search(message.text):
            self.seen.append(message.text)


@pytest.fixture
def open_page(browser):
    """open_page(url, **context options) -> page; fails the test on any page error."""
    contexts, problems = [], []

    def open_(url: str | None = None, **options):
        context = browser.new_context(**{"viewport": {"width": 900, "height": 720}, **options})
        contexts.append(context)
        page = context.new_page()
        problems.append(Problems(page))
        if url:
            page.goto(url)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert [p for seen in problems for p in seen.seen] == []


# Helpers


def publish(api: httpx.Client, **agent) -> dict:
    """A new route to a new agent (with an avatar unless `avatar_id=None`); the route."""
    if "avatar_id" not in agent:
        agent["avatar_id"] = avatar(api)["avatar_id"]
    agent = {"name": "Ada", "greeting": GREETING, **agent}
    created = api.post("/v1/agents", json={k: v for k, v in agent.items() if v is not None})
    assert created.status_code == 201, created.text
    route = api.post(f"/v1/agents/{created.json()['data']['agent_id']}/routes", json={})
    assert route.status_code == 201, route.text
    return route.json()["data"]


def avatar(api: httpx.Client, name: str | None = None) -> dict:
    """A new avatar: a simple drawn portrait."""
    image = Image.new("RGB", (192, 192), (88, 120, 196))
    draw = ImageDraw.Draw(image)
    draw.ellipse((60, 28, 132, 108), fill=(238, 200, 170))
    draw.rectangle((36, 120, 156, 192), fill=(40, 58, 92))
    png = io.BytesIO()
    image.save(png, format="PNG")
    files = {"image": ("face.png", png.getvalue(), "image/png")}
    response = api.post("/v1/avatars", files=files, data={"name": name} if name else None)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def say(page, text: str) -> None:
    """Type `text` and press Enter; the visitor's message shows at once."""
    before = page.locator(".message.user").count()
    page.locator("#message").fill(text)
    page.locator("#message").press("Enter")
    expect(page.locator(".message.user")).to_have_count(before + 1)


def last_reply(page):
    """The last assistant message, once it has stopped streaming."""
    expect(page.locator(".message.streaming")).to_have_count(0)
    return page.locator(".message.assistant").last


def ready(page) -> None:
    expect(page.locator("#state")).to_have_attribute("data-state", "ready")
    expect(page.locator("#send")).to_be_disabled()  # nothing typed yet
    expect(page.locator("#message")).to_be_enabled()


# Routes


def test_route_page_greets_and_streams_replies(api, open_page, shots):
    route = publish(api)
    page = open_page()
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(route["url"])

    expect(page.locator(".message.assistant").first).to_have_text(GREETING)
    ready(page)
    expect(page.locator(".portrait img")).to_have_attribute("src", re.compile(r"/avatars/av_"))
    expect(page.locator("h1")).to_have_text("Ada")
    expect(page.locator("#transcript")).to_have_attribute("aria-live", "polite")
    expect(page.locator("#message")).to_be_focused()

    say(page, "What is 2 + 2?")
    expect(last_reply(page)).to_have_text(re.compile(re.escape(ECHO + "What is 2 + 2?") + "$"))
    deltas = [f for f in frames if isinstance(f, str) and '"type":"delta"' in f]
    assert len(deltas) >= 2  # the reply really streamed in pieces

    # Shift+Enter starts a new line; Enter sends both.
    page.locator("#message").fill("line one")
    page.locator("#message").press("Shift+Enter")
    page.locator("#message").press_sequentially("line two")
    page.locator("#message").press("Enter")
    expect(page.locator(".message.user").last).to_have_text("line one\nline two")
    expect(last_reply(page)).to_contain_text("line one\nline two")
    expect(page.locator("#message")).to_have_value("")
    page.screenshot(path=shots / "route-conversation.png")


def test_conversation_text_is_never_markup(api, open_page):
    route = publish(api, name="<i>Eve</i>", greeting="<img src=x> & <b>hi</b>", avatar_id=None)
    page = open_page(route["url"])
    expect(page.locator(".message.assistant").first).to_have_text("<img src=x> & <b>hi</b>")
    expect(page.locator("h1")).to_have_text("<i>Eve</i>")
    expect(page.locator(".portrait svg.placeholder")).to_be_visible()
    say(page, "<script>alert(1)</script>")
    expect(last_reply(page)).to_contain_text("<script>alert(1)</script>")
    expect(page.locator("#transcript img, #transcript b, #transcript script")).to_have_count(0)


def test_revoking_the_route_ends_the_open_page(api, open_page, shots):
    route = publish(api)
    page = open_page(route["url"])
    ready(page)
    api.post(f"/v1/agent-routes/{route['id']}/revoke").raise_for_status()

    ended = page.locator("#ended")
    expect(ended).to_be_visible(timeout=ENDED_WITHIN_MS)
    expect(ended).to_contain_text("This conversation has ended.")
    expect(ended).to_contain_text("was revoked")
    expect(page.locator("#state")).to_have_attribute("data-state", "ended")
    expect(page.locator("#message")).to_be_disabled()
    expect(page.locator("#send")).to_be_disabled()
    expect(ended).to_be_focused()
    page.screenshot(path=shots / "route-ended.png")


def test_a_revoked_link_is_a_410_page(api, open_page, shots):
    route = publish(api)
    api.post(f"/v1/agent-routes/{route['id']}/revoke").raise_for_status()
    page = open_page()
    response = page.goto(route["url"])
    assert response.status == 410
    expect(page.locator("h1")).to_have_text("This link is no longer active")
    expect(page.locator("#message")).to_have_count(0)
    page.screenshot(path=shots / "route-410.png")


def test_a_failing_agent_shows_an_error_and_the_conversation_goes_on(api, open_page, free_port):
    closed = f"http://127.0.0.1:{free_port()}/chat"  # nothing listens there
    route = publish(
        api, runtime_kind="custom_agent", custom_agent_url=closed,
        custom_agent_protocol="openai_chat",
    )  # fmt: skip
    page = open_page(route["url"])
    ready(page)
    say(page, "Are you there?")
    expect(page.locator(".note.error")).to_have_text("The agent's service could not be reached.")
    expect(page.locator("#state")).to_have_attribute("data-state", "ready")
    say(page, "Still there?")
    expect(page.locator(".note.error")).to_have_count(2)


def test_the_character_limit_is_the_servers(api, open_page, shots):
    page = open_page(publish(api)["url"])
    ready(page)
    box, send = page.locator("#message"), page.locator("#send")
    box.fill("x" * 4001)
    expect(page.locator("#count")).to_have_text("4,001 / 4,000")
    expect(page.locator("#limit")).to_be_visible()
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(send).to_be_disabled()
    box.press("Enter")
    expect(page.locator(".message.user")).to_have_count(0)
    page.screenshot(path=shots / "too-long.png")

    # 4,000 characters outside the BMP are 8,000 UTF-16 units, and still one valid message.
    box.fill("😀" * 4000)
    expect(page.locator("#limit")).to_be_hidden()
    expect(send).to_be_enabled()
    send.click()
    expect(last_reply(page)).to_contain_text(ECHO + "😀😀")
    expect(page.locator(".note.error")).to_have_count(0)


# Sessions


def test_a_session_page_connects_then_talks(api, open_page, shots):
    avatar_id = avatar(api, name="Nova")["avatar_id"]
    started = api.post("/v1/interactive/start_session", json={"avatar_id": avatar_id})
    session = started.json()["data"]["session"]
    page = open_page(session["client_url"])

    expect(page.locator("#state")).to_have_attribute("data-state", "connecting")
    expect(page.locator("#state")).to_have_text("Connecting…")
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("h1")).to_have_text("Nova")
    page.screenshot(path=shots / "session-connecting.png")

    ready(page)
    expect(page.locator("#state")).to_have_text("Ready")
    say(page, "hello")
    expect(last_reply(page)).to_contain_text(ECHO + "hello")
    page.screenshot(path=shots / "session-ready.png")

    body = {"session_ids": [session["session_id"]]}
    api.post("/v1/interactive/stop_sessions", json=body).raise_for_status()
    expect(page.locator("#ended")).to_contain_text("The session was stopped.")
    expect(page.locator("#message")).to_be_disabled()


# Dropped connections


class Relay:
    """The page's conversation sockets, routed through Playwright, which can drop them, or
    stop passing the server's frames on (`deaf`)."""

    def __init__(self, page, url: str) -> None:
        self.sockets: list = []
        self.deaf = False
        pattern = re.compile(re.escape(url.replace("http", "ws", 1)) + r"/ws(\?.*)?$")
        page.route_web_socket(pattern, self._relay)

    def _relay(self, ws) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: None if self.deaf else ws.send(message))
        self.sockets.append(ws)


def test_a_dropped_connection_comes_back_as_a_new_conversation(api, open_page, shots):
    route = publish(api)
    page = open_page()
    relay = Relay(page, route["url"])
    page.goto(route["url"])
    ready(page)
    say(page, "first")
    expect(last_reply(page)).to_contain_text("first")

    relay.sockets[0].close(code=1011, reason="network down")
    expect(page.locator(".note.info")).to_have_text(
        "The connection was lost. This is a new conversation."
    )
    ready(page)
    expect(page.locator(".message.assistant", has_text=GREETING)).to_have_count(2)
    say(page, "second")
    expect(last_reply(page)).to_contain_text("second")
    assert len(relay.sockets) == 2
    page.screenshot(path=shots / "reconnected.png")


def test_a_link_revoked_while_disconnected_ends_instead_of_retrying(api, open_page, shots):
    route = publish(api)
    page = open_page()
    relay = Relay(page, route["url"])
    page.goto(route["url"])
    ready(page)

    relay.deaf = True  # the page never hears the "ended" frame: only the socket closing
    api.post(f"/v1/agent-routes/{route['id']}/revoke").raise_for_status()
    expect(page.locator("#ended")).to_contain_text("This link is no longer active.")
    expect(page.locator("#message")).to_be_disabled()
    assert len(relay.sockets) == 1  # no new socket was tried
    page.screenshot(path=shots / "link-gone.png")


def test_the_page_comes_back_after_a_server_restart(start_serve_module, open_page, shots):
    first = start_serve_module()
    with httpx.Client(base_url=first.base, headers=first.auth, timeout=10) as client:
        route = publish(client)
    page = open_page(route["url"])
    ready(page)

    first.process.send_signal(signal.SIGTERM)
    first.process.wait(timeout=30)
    expect(page.locator("#state")).to_have_text("Reconnecting…")
    page.screenshot(path=shots / "reconnecting.png")
    start_serve_module(data_dir=first.data_dir, port=first.port)
    # Tries come 0.5-1 s, then 1-2 s, 2-4 s, ... apart: generous for a slow restart.
    expect(page.locator(".note.info")).to_be_visible(timeout=30_000)
    ready(page)
    say(page, "after the restart")
    expect(last_reply(page)).to_contain_text(ECHO + "after the restart")


# Speech (the fake-microphone tests are in test_browser_voice.py)


def test_no_microphone_button_without_a_microphone_api(api, open_page):
    page = open_page()
    page.add_init_script("Object.defineProperty(navigator, 'mediaDevices', {value: undefined});")
    page.goto(publish(api)["url"])
    ready(page)
    expect(page.locator("#mic")).to_be_hidden()
    expect(page.locator("#sound")).to_be_visible()


# Where the page is shown


@pytest.fixture(scope="module")
def host_site() -> Iterator[str]:
    """Another site (another origin) that frames pages: /?src=<url> shows <url> in an iframe."""

    class Host(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            src = self.path.partition("?src=")[2]
            body = (
                "<!doctype html><title>Host</title><h1>A host site</h1>"
                f'<iframe src="{src}" width="420" height="560" '
                'allow="camera; microphone; fullscreen" title="Avatar"></iframe>'
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    host = ThreadingHTTPServer(("127.0.0.1", 0), Host)
    thread = threading.Thread(target=host.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{host.server_address[1]}"
    host.shutdown()
    host.server_close()


def test_the_page_works_inside_an_iframe_of_another_site(api, open_page, host_site, shots):
    url = publish(api)["url"]
    page = open_page(f"{host_site}/?src={url}")
    frame = page.frame_locator("iframe")
    expect(frame.locator(".message.assistant").first).to_have_text(GREETING)
    expect(frame.locator("#state")).to_have_attribute("data-state", "ready")
    expect(frame.locator("#message")).not_to_be_focused()  # the host page keeps its focus
    frame.locator("#message").fill("from the host")
    frame.locator("#message").press("Enter")
    expect(frame.locator(".message.assistant").last).to_contain_text(ECHO + "from the host")
    page.screenshot(path=shots / "iframe.png")


def test_a_phone_sized_screen(api, open_page, shots):
    page = open_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.goto(publish(api)["url"])
    ready(page)
    for n in range(6):
        say(page, f"message {n} " + "with quite a few words in it " * 3)
        expect(last_reply(page)).to_contain_text(f"message {n}")

    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths  # no horizontal scrolling
    box = page.locator("#message").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 844, box
    expect(page.locator("#message")).to_be_in_viewport()
    expect(page.locator("#send")).to_be_in_viewport()
    expect(page.locator(".message.assistant").last).to_be_in_viewport()  # followed the reply
    scroll = page.locator("#transcript").evaluate("t => [t.scrollHeight, t.clientHeight]")
    assert scroll[0] > scroll[1]  # the transcript scrolls, not the page
    page.screenshot(path=shots / "phone.png")
