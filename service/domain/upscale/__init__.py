"""The video upscale task, one module per job: `checks` (the request's own checks and the
inspection of an uploaded video), `submission` (a submission from its query to its queued
task), `run` (the work in a task worker, its result and its billing), `results` (who may read
the result, through which link, until when) and `status` (what its status call shows)."""

from __future__ import annotations

KIND = "upscale"
