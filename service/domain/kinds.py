"""The kinds of task a worker can run, by name."""

from __future__ import annotations

from functools import cache

from service.domain.generation import Generation
from service.domain.task_runs import TaskKind
from service.domain.upscale.run import Upscale
from service.generators.procedural import ProceduralPortraits


@cache
def task_kinds() -> dict[str, TaskKind]:
    return {kind.name: kind for kind in (Upscale(), Generation(ProceduralPortraits()))}


def task_kind(name: str) -> TaskKind:
    return task_kinds()[name]
