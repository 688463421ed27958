"""The motions of an avatar motion video, chosen by the words of its prompts (docs/api.md,
"Avatar motion video", lists the same words).

A preset is on when a word of the positive prompt names it, and off when a word of the
negative prompt does (the negative prompt wins). Words are matched whole, case-insensitively,
after cutting the prompt at anything that is not a letter. Without any motion word the video
moves as a talking-avatar video does: blinks, a slight idle sway and small nods on stressed
syllables."""

from __future__ import annotations

import re
from dataclasses import dataclass

# preset -> the words that name it.
PRESET_WORDS: dict[str, tuple[str, ...]] = {
    "nod": ("nod", "nods", "nodding", "agree", "agreeing", "yes"),
    "shake": ("shake", "shakes", "shaking", "disagree", "disagreeing"),
    "tilt": ("tilt", "tilts", "tilted", "tilting", "curious", "quizzical"),
    "smile": ("smile", "smiles", "smiling", "happy", "laugh", "laughs", "laughing", "cheerful"),
    "look_around": ("around", "glance", "glances", "glancing", "wander", "wandering"),
    "blink": ("blink", "blinks", "blinking"),
    "sway": ("sway", "swaying", "moving", "movement", "motion"),
    "still": ("still", "calm", "steady", "motionless", "serious"),
}
# On unless a negative word switches them off (a talking face blinks and sways by default).
DEFAULT_ON = frozenset({"blink", "sway"})
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class MotionPlan:
    """Which presets a video plays (`still` damps every head motion to a fifth)."""

    presets: frozenset[str]

    def has(self, preset: str) -> bool:
        return preset in self.presets


# What a talking-avatar video plays.
TALKING_PLAN = MotionPlan(DEFAULT_ON | {"nod"})


def _named(prompt: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(prompt)}
    return {preset for preset, names in PRESET_WORDS.items() if words & set(names)}


def plan_of(positive_prompt: str, negative_prompt: str) -> MotionPlan:
    """The presets the prompts choose: the defaults and what the positive prompt names, less
    what the negative prompt names. Nodding on stressed syllables is the default too, unless
    another head motion was asked for."""
    wanted = _named(positive_prompt)
    if not wanted & {"shake", "tilt", "look_around", "still"}:
        wanted.add("nod")
    return MotionPlan(frozenset((DEFAULT_ON | wanted) - _named(negative_prompt)))
