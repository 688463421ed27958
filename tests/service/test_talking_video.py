"""Generated videos: /v1/video/async_generate_talking_avatar and async_generate_avatar_motion
through the test client (no worker runs there: a test runs the next task as a worker would),
with generated portraits whose landmarks the generator knows; the MP4s they make, decoded
frame by frame."""

from __future__ import annotations

import asyncio
import base64
import io
from urllib.parse import urlsplit

import av
import numpy as np
from PIL import Image

import engine
from service.domain import task_runs as runs
from service.domain.faces import FaceLandmarks
from service.domain.talking import FPS, MOTION, TALKING
from service.domain.talking.run import GeneratedVideo
from service.domain.task_runs import Job, TaskFailed
from service.generators.procedural import ProceduralPortraits
from service.generators.talking_video import BuiltInTalkingVideos
from tests.service import hosted_types as hosted
from tests.service.test_generation import run_next_task as run_generation

TALK = "/v1/video/async_generate_talking_avatar"
MOVE = "/v1/video/async_generate_avatar_motion"
SIDE = 192
RATE = 24_000
PROMPT, SEED = "a cheerful sailor", 3


def _pixels(image: bytes) -> bytes:
    return np.asarray(Image.open(io.BytesIO(image)).convert("RGB")).tobytes()


class KnownFaces:
    """A `FaceFinder` for images whose faces are known (by their pixels, however the image was
    re-encoded); other images have none."""

    def __init__(self) -> None:
        self._faces: dict[bytes, list[FaceLandmarks]] = {}

    def add(self, png: bytes, face: FaceLandmarks) -> bytes:
        self._faces[_pixels(png)] = [face]
        return png

    def find(self, image: bytes) -> list[FaceLandmarks]:
        return list(self._faces.get(_pixels(image), []))


FACES = KnownFaces()
PORTRAIT = FACES.add(
    ProceduralPortraits().render(PROMPT, SIDE, SIDE, SEED),
    ProceduralPortraits().face(PROMPT, SIDE, SIDE, SEED),
)
FACE = FACES.find(PORTRAIT)[0]


def speech_like(segments: list[tuple[float, bool]]) -> np.ndarray:
    """Syllables (a voiced buzz whose loudness rises and falls four times a second) where a
    segment says True, silence where False: float samples at RATE."""
    parts = []
    for seconds, voiced in segments:
        t = np.arange(round(seconds * RATE)) / RATE
        if not voiced:
            parts.append(np.zeros_like(t))
            continue
        buzz = sum(np.sin(2 * np.pi * 130 * k * t) / k for k in range(1, 25))
        parts.append(0.35 * buzz / np.abs(buzz).max() * np.sin(np.pi * 4 * t) ** 2)
    return np.concatenate(parts)


def wav_of(samples: np.ndarray) -> bytes:
    return engine.wav_bytes((samples * 32767).astype("<i2").tobytes(), RATE)


SPEECH = speech_like([(1.0, True), (1.0, False), (1.0, True)])
WAV = wav_of(SPEECH)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def submit(api, auth, path=TALK, **body) -> dict:
    body = {"image": b64(PORTRAIT), "audio": b64(WAV)} | body
    response = api.post(path, auth, json={k: v for k, v in body.items() if v is not None})
    assert response.status_code == 200, response.text
    return hosted.read(response, hosted.AsyncGenerateTalkingAvatarApiResponseBody).data


def run_next(api) -> None:
    """Claim the next task and run it as a worker would (the kinds' own renderer, with the
    generator's landmarks as the face finder)."""
    ctx = api.ctx

    async def work() -> None:
        task = await runs.claim(ctx, "wrk_test")
        kind = GeneratedVideo(task.kind, FACES, BuiltInTalkingVideos())
        try:
            output = await asyncio.to_thread(kind.run, Job(task, ctx.settings, ctx.files))
        except TaskFailed as exc:
            await runs.fail(ctx, task, kind, exc.error)
            return
        await runs.complete(ctx, task, kind, output)

    with api.client.portal() as portal:
        portal.call(work)


def status(api, auth, task_id, path=TALK):
    response = api.get(f"{path}/{task_id}/status", auth)
    return hosted.read(response, hosted.GenerateTalkingAvatarStatusApiResponseBody).data


def download(api, file_url: str) -> bytes:
    link = urlsplit(file_url)
    response = api.client.get(f"{link.path}?{link.query}")
    assert response.status_code == 200, response.text
    return response.content


def made(api, auth, path=TALK, **body):
    task = submit(api, auth, path, **body)
    run_next(api)
    view = status(api, auth, task.task_id, path)
    assert view.status == "COMPLETED", view
    return view, download(api, view.file_url)


def decoded(mp4: bytes):
    """(grey frames as float arrays, video duration, audio duration, audio samples)."""
    with av.open(io.BytesIO(mp4)) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        assert (video.codec_context.name, audio.codec_context.name) == ("h264", "aac")
        durations = [float(s.duration * s.time_base) for s in (video, audio)]
        frames = [f.to_ndarray(format="gray").astype(np.float32) for f in container.decode(video)]
    return np.stack(frames), *durations


def frame_envelope(samples: np.ndarray, frames: int) -> np.ndarray:
    hop = RATE // FPS
    return np.array(
        [np.sqrt(np.mean(samples[i * hop : (i + 1) * hop] ** 2)) for i in range(frames)]
    )


def box_motion(frames: np.ndarray, x0, y0, x1, y1) -> np.ndarray:
    """Mean absolute change of each frame from the one before, inside a box."""
    crop = frames[:, int(y0) : int(y1), int(x0) : int(x1)]
    return np.concatenate([[0.0], np.abs(np.diff(crop, axis=0)).mean(axis=(1, 2))])


def mouth_box(face: FaceLandmarks):
    half = face.mouth_width
    return face.mouth.x - half, face.mouth.y - 0.5 * half, face.mouth.x + half, face.mouth.y + half


# The video


def test_a_talking_video_speaks_the_audio_in_the_hosted_shape(api, alice):
    view, mp4 = made(api, alice)
    frames, video_s, audio_s = decoded(mp4)
    spoken = len(SPEECH) / RATE
    assert abs(view.output_duration - spoken) <= 1 / FPS
    assert abs(video_s - spoken) <= 1 / FPS and abs(audio_s - spoken) <= 1 / FPS
    assert len(frames) == round(spoken * FPS) and frames.shape[1:] == (SIDE, SIDE)
    # The mouth moves with the sound: its frame-to-frame change follows the loudness over a
    # syllable's time (within one, it moves most while opening and closing, not at the peak)...
    motion = box_motion(frames, *mouth_box(FACE))
    loudness = frame_envelope(SPEECH, len(frames))
    syllable = np.ones(7) / 7
    smoothed = [np.convolve(x, syllable, "same") for x in (motion, loudness)]
    assert np.corrcoef(*smoothed)[0, 1] > 0.6
    # ...and rests in the pause (a frame in from its edges: lips within one frame of sound).
    pause = slice(FPS + 1, 2 * FPS - 1)
    speaking = np.r_[2 : FPS - 1, 2 * FPS + 2 : 3 * FPS - 1]
    assert motion[pause].mean() < 0.25 * motion[speaking].mean()
    # The mouth opens again in the frame the sound comes back in (2 s: frame 50), or the next.
    moving = np.nonzero(motion[2 * FPS - 10 :] > 1.0)[0][0] + 2 * FPS - 10
    assert moving in (2 * FPS, 2 * FPS + 1)


def test_nothing_beyond_the_head_moves(api, alice):
    _, mp4 = made(api, alice)
    frames = decoded(mp4)[0]
    face = FACE
    # Beyond the head (the hair above the face's box, which starts at the hairline, included)
    # and the margin its motion may take, every frame is the still portrait.
    outside = np.ones(frames.shape[1:], bool)
    x0, x1 = int(face.left - 0.45 * face.width), int(face.left + 1.45 * face.width)
    y0, y1 = int(face.top - 0.6 * face.height), int(face.top + 1.45 * face.height)
    outside[max(0, y0) : y1, max(0, x0) : x1] = False
    change = np.abs(frames - frames[0])[:, outside]
    assert change.mean() < 0.5 and np.percentile(change, 99.9) < 6


def test_a_motion_video_without_motions_keeps_still_in_pauses(api, alice):
    """With every motion switched off by the negative prompt, only the mouth moves: nothing at
    all during the pause."""
    body = {
        "positive_prompt": "a sailor talking",
        "negative_prompt": "no blinking, swaying or nodding",
    }
    _view, mp4 = made(api, alice, MOVE, **body)
    frames = decoded(mp4)[0]
    face = FACE
    whole = box_motion(frames, 0, 0, SIDE, SIDE)
    assert whole[FPS + 2 : 2 * FPS - 1].max() < 0.05
    eyes = box_motion(frames, face.left, face.left_eye.y - face.eye_width,
                      face.left + face.width, face.left_eye.y + face.eye_width)  # fmt: skip
    assert eyes.max() < 0.3  # no blinks, no head motion
    assert box_motion(frames, *mouth_box(face))[2 : FPS - 1].mean() > 0.25


def test_text_is_spoken_with_the_voice_and_drives_the_mouth(api, alice):
    text = "Hello there. How are you today?"
    tts = api.post("/v1/speech/tts", alice, json={"text": text, "voice_profile_id": "espeak-en-us",
                                                   "return_type": "b64_audio_str"})  # fmt: skip
    spoken = tts.json()["data"]["output_duration"]
    _view, mp4 = made(api, alice, audio=None, text=text, voice_profile_id="espeak-en-us")
    frames, video_s, audio_s = decoded(mp4)
    assert abs(video_s - spoken) <= 1 / FPS and abs(audio_s - spoken) <= 1 / FPS
    assert box_motion(frames, *mouth_box(FACE)).max() > 2.0


def test_a_generated_avatar_speaks_with_the_face_kept_for_it(api, alice):
    """A generated avatar keeps the landmarks its generator drew: the run needs no finder (the
    test's knows no face of this portrait)."""
    body = {"prompt": "a lighthouse keeper", "width": 256, "height": 320, "seed": 5}
    response = api.post("/v1/avatar/async_generate", alice, json=body)
    assert response.status_code == 200, response.text
    run_generation(api)
    status_path = f"/v1/avatar/async_generate/{response.json()['data']['task_id']}/status"
    avatar_id = api.get(status_path, alice).json()["data"]["avatar_id"]
    _, mp4 = made(api, alice, image=None, avatar_id=avatar_id)
    assert decoded(mp4)[0].shape[1:] == (320, 256)


def test_an_avatar_without_a_face_is_refused(api, alice, png_bytes):
    avatar = api.avatar(alice, png_bytes(64, 64))
    body = {"avatar_id": avatar["avatar_id"], "audio": b64(WAV)}
    response = api.post(TALK, alice, json=body)
    assert response.status_code == 422 and "without a face" in response.text


def test_an_image_without_a_face_fails_saying_so(api, alice, png_bytes):
    task = submit(api, alice, image=b64(png_bytes(64, 64)))
    run_next(api)
    view = status(api, alice, task.task_id)
    assert view.status == "FAILED" and "No face" in view.error
    assert hosted.is_unset(view.file_url)


def test_usage_counts_seconds_of_video_by_kind(api, alice):
    made(api, alice)
    made(api, alice, MOVE, positive_prompt="nodding", negative_prompt="")
    usage = api.get("/v1/usage", alice).json()["data"]
    assert sorted((item["kind"], item["seconds"]) for item in usage["items"]) == [
        (MOTION, 3.0),
        (TALKING, 3.0),
    ]
    assert usage["totals"]["talking_video_seconds"] == 3.0
    assert usage["totals"]["motion_video_seconds"] == 3.0
