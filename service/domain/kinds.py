"""The kinds of task a worker can run, by name."""

from __future__ import annotations

from service.domain.generation import Generation
from service.domain.task_runs import TaskKind
from service.domain.upscale import Upscale
from service.generators.procedural import ProceduralPortraits


def task_kinds() -> dict[str, TaskKind]:
    return {kind.name: kind for kind in (Upscale(), Generation(ProceduralPortraits()))}
