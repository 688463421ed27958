"""The generated videos (SPEC 14): a portrait speaking a recording or a text, as an MP4. Two task
kinds share everything but their motions: `talking_video` (blinks, a slight sway, small nods)
and `motion_video` (motions chosen by prompts, `service.domain.motion_presets`). One module per
job: `inputs` (the request's checks and its stored inputs), `run` (the work in a task worker,
its result and usage) and `status` (what the status calls show).

The kind names are also their usage kinds (seconds of video)."""

from __future__ import annotations

TALKING = "talking_video"
MOTION = "motion_video"
KINDS = (TALKING, MOTION)
# Frames per second of every generated video.
FPS = 25
# The portrait is scaled down to fit this many pixels a side (frames cost their area).
MAX_VIDEO_SIDE = 1024
