"""The kinds of task a worker can run, by name."""

from __future__ import annotations

from functools import cache

from service.cluster.dask_segments import dask_segments
from service.domain.avatar_builds import AvatarBuild
from service.domain.cloning import VoiceClone
from service.domain.generation import Generation
from service.domain.image_tasks import ImageGeneration
from service.domain.talking import MOTION, TALKING
from service.domain.talking.run import GeneratedVideo
from service.domain.task_runs import TaskKind
from service.domain.upscale.run import Upscale
from service.generators.face_finders import face_finder
from service.generators.openai_images import image_backend
from service.generators.procedural import ProceduralPortraits
from service.generators.talking_video import BuiltInTalkingVideos
from service.generators.voice_match import BuiltInMatcher


@cache
def task_kinds() -> dict[str, TaskKind]:
    finder, renderer = face_finder(), BuiltInTalkingVideos()
    kinds = (
        Upscale(dask_segments),
        Generation(ProceduralPortraits()),
        VoiceClone(BuiltInMatcher()),
        ImageGeneration(image_backend),
        AvatarBuild(finder),
    )
    kinds += tuple(GeneratedVideo(name, finder, renderer) for name in (TALKING, MOTION))
    return {kind.name: kind for kind in kinds}


def task_kind(name: str) -> TaskKind:
    return task_kinds()[name]
