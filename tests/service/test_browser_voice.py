"""The conversation page speaks and listens, in Debian's Chromium with a fake microphone that
plays a WAV the built-in TTS made (`--use-file-for-fake-audio-capture`): the visitor speaks, the
server's transcript appears as the visitor's message, the reply plays through the Web Audio API
(the page's audio clock advances) and the portrait's speaking ring follows its visemes, read
from the audio clock on every frame (within one 60 Hz frame of the sound). A portrait with a
face (a photo: scikit-image's astronaut) is animated instead: its mouth region changes while
the avatar speaks and is back to the resting face after, its eyes blink and its head sways."""

from __future__ import annotations

import io
import time

import httpx
import pytest
from PIL import Image

import engine
from service.domain.speech import BUILT_IN, Voice
from service.domain.visemes import MOUTH
from service.generators import espeak
from tests.service.test_browser import (
    CHROMIUM_FLAGS,
    Problems,
    last_reply,
    publish,
    ready,
    say,
)

sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
expect, sync_playwright = sync_api.expect, sync_api.sync_playwright

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FRAME_S = 1 / 60


@pytest.fixture(scope="module")
def microphone_wav(tmp_path_factory) -> str:
    speech = espeak.speak("Hello world. This is a test.", Voice(BUILT_IN, "en-us", rate=150))
    path = tmp_path_factory.mktemp("microphone") / "visitor.wav"
    path.write_bytes(engine.wav_bytes(speech.pcm, speech.sample_rate))
    return str(path)


@pytest.fixture(scope="module")
def server(start_serve_module):
    return start_serve_module()


@pytest.fixture(scope="module")
def api(server):
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def page(microphone_wav):
    flags = [
        *CHROMIUM_FLAGS,
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={microphone_wav}",
    ]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=flags)
        context = browser.new_context(permissions=["microphone"])
        page = context.new_page()
        problems = Problems(page)
        yield page
        context.close()
        browser.close()
        assert problems.seen == []


def _face(page) -> dict:
    return page.evaluate("({...avatarFace, timeline: avatarFace.timeline()})")


def _shapes_near(timeline: list[dict], clock: float) -> set[str]:
    """The visemes the sound shows within one 60 Hz frame of `clock`."""
    shapes = set()
    for at in (clock - FRAME_S, clock, clock + FRAME_S):
        shown = "sil"
        for sentence in timeline:
            if sentence["start"] <= at < sentence["end"]:
                ms = (at - sentence["start"]) * 1000
                shown = next(
                    (name for start, name in reversed(sentence["visemes"]) if start <= ms), "sil"
                )
        shapes.add(shown)
    return shapes


def test_the_visitor_speaks_and_the_avatar_answers_aloud(api, page):
    page.goto(publish(api)["url"])
    ready(page)
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("avatarFace.mode") == "ring"  # a drawing the finder sees no face in
    mic = page.locator("#mic")
    mic.click()  # the first gesture: sound may play from now on
    expect(mic).to_have_attribute("aria-pressed", "true")
    page.wait_for_timeout(3500)  # the fake microphone plays the sentence (2.5 s) into it
    mic.click()
    heard = page.locator(".message.user")
    expect(heard).to_have_count(1, timeout=30_000)
    assert heard.text_content().strip()  # PocketSphinx heard words (not necessarily these)
    reply = last_reply(page)
    expect(reply).to_contain_text(heard.text_content())

    # The reply plays: the audio clock advances, and each drawn frame shows the sound's shape.
    samples, opened = [], set()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(opened) < 3:
        face = _face(page)
        if face["timeline"]:
            samples.append(face)
            assert face["viseme"] in _shapes_near(face["timeline"], face["clock"]), face
            assert [face["open"], face["wide"]] == list(MOUTH[face["viseme"]])
            if face["viseme"] != "sil":
                opened.add(face["viseme"])
        page.wait_for_timeout(37)
    assert len(opened) >= 3, samples[-3:]
    assert samples[-1]["clock"] > samples[0]["clock"]
    assert samples[-1]["frames"] > samples[0]["frames"]


def test_the_sound_toggle_silences_the_voice(api, page):
    page.goto(publish(api)["url"])
    ready(page)
    page.locator("#sound").click()
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")
    page.locator("#message").fill("Say something. Then more.")
    page.locator("#message").press("Enter")
    last_reply(page)
    page.wait_for_timeout(500)
    assert _face(page)["timeline"] == []  # nothing was queued to play
    page.reload()  # the choice is remembered
    ready(page)
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")
    page.locator("#sound").click()


@pytest.fixture(scope="module")
def astronaut(api) -> str:
    """An avatar of a real face (the finder places its eyes and mouth): its id."""
    skimage_data = pytest.importorskip("skimage.data")
    png = io.BytesIO()
    Image.fromarray(skimage_data.astronaut()).save(png, format="PNG")
    files = {"image": ("astronaut.png", png.getvalue(), "image/png")}
    response = api.post("/v1/avatars", files=files)
    assert response.status_code == 201, response.text
    return response.json()["data"]["avatar_id"]


def _mouth_shot(page) -> bytes:
    box = page.evaluate("avatarFace.mouthBox")
    return page.screenshot(clip=box, animations="allow")


def test_a_face_blinks_and_sways_when_idle(api, page, astronaut):
    page.goto(publish(api, avatar_id=astronaut)["url"])
    ready(page)
    blinked = "() => avatarFace.mode === 'face' && avatarFace.blinks >= 1"
    page.wait_for_function(blinked, timeout=10_000)
    first = _face(page)["head"]
    page.wait_for_function(
        f"() => Math.abs(avatarFace.head.dx - {first['dx']}) > 0.05"
        f" && Math.abs(avatarFace.head.angle - {first['angle']}) > 0.0001"
    )
    assert page.locator(".portrait img").evaluate("i => getComputedStyle(i).visibility") == (
        "hidden"  # the canvas draws the portrait
    )


def test_the_mouth_speaks_with_the_sound_and_rests_after(api, page, astronaut):
    """With reduced motion (no sway, no blinks) a frame of the resting face is exact, so the
    mouth region after the reply must equal the one before it."""
    page.emulate_media(reduced_motion="reduce")
    try:
        page.goto(publish(api, avatar_id=astronaut)["url"])
        ready(page)
        page.wait_for_function("() => avatarFace.mode === 'face'")
        page.locator("#message").click()  # the first gesture: sound may play from now on
        quiet = "() => avatarFace.timeline().length === 0 && avatarFace.viseme === 'sil'"
        page.wait_for_function(quiet, timeout=30_000)  # a greeting heard after the click ends
        resting = _mouth_shot(page)
        say(page, "Hello there. How are you today? Tell me everything.")
        shots, shapes = set(), set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (len(shots - {resting}) < 2 or len(shapes) < 3):
            face = _face(page)
            if face["timeline"] and face["open"] > 0:
                assert face["viseme"] in _shapes_near(face["timeline"], face["clock"]), face
                shapes.add(face["viseme"])
                shots.add(_mouth_shot(page))
            page.wait_for_timeout(23)
        # The mouth moved with the sound (a shot may catch it closed, on "PP" or between
        # sentences: two open ones must still differ from each other and from the rest).
        assert len(shapes) >= 3 and len(shots - {resting}) >= 2, shapes
        page.wait_for_function(quiet, timeout=30_000)
        assert _face(page)["head"] == {"dx": 0, "dy": 0, "angle": 0}
        assert _mouth_shot(page) == resting
    finally:
        page.emulate_media(reduced_motion="no-preference")
