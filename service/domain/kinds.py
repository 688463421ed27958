"""The kinds of task a worker can run, by name."""

from __future__ import annotations

from functools import cache

from service.cluster.dask_segments import dask_segments
from service.domain.cloning import VoiceClone
from service.domain.generation import Generation
from service.domain.task_runs import TaskKind
from service.domain.upscale.run import Upscale
from service.generators.procedural import ProceduralPortraits
from service.generators.voice_match import BuiltInMatcher


@cache
def task_kinds() -> dict[str, TaskKind]:
    kinds = (
        Upscale(dask_segments),
        Generation(ProceduralPortraits()),
        VoiceClone(BuiltInMatcher()),
    )
    return {kind.name: kind for kind in kinds}


def task_kind(name: str) -> TaskKind:
    return task_kinds()[name]
