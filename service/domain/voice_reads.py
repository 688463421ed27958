"""What the voice endpoints show: profiles with their sample links, and a clone task's status
(for its status call and its webhook's body). The views (`service.schemas.voice`) are made
from these."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain import cloning, voices
from service.domain.context import Context
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.tasks import cancel, owned_task, queue_position


@dataclass(frozen=True)
class ShownProfile:
    profile: voices.Profile
    sample_link: str  # a signed path (with query) to its sample clip


@dataclass(frozen=True)
class CloneState:
    """What a clone task's status view shows now, beside the task itself."""

    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue


def shown(ctx: Context, profiles: list[voices.Profile]) -> list[ShownProfile]:
    return [ShownProfile(p, voices.sample_link(ctx, p)) for p in profiles]


def premade_profiles(ctx: Context) -> list[ShownProfile]:
    return shown(ctx, voices.premade_profiles(ctx))


async def owned_profiles(ctx: Context, owner_id: str) -> list[ShownProfile]:
    return shown(ctx, await voices.owned_profiles(ctx, owner_id))


async def get_profile(ctx: Context, owner_id: str, profile_id: str) -> ShownProfile:
    [found] = shown(ctx, [await voices.get_profile(ctx, owner_id, profile_id)])
    return found


async def clone_state(ctx: Context, task: Task) -> CloneState:
    return CloneState(task, await queue_position(ctx, task))


async def owned_clone(ctx: Context, owner_id: str, task_id: str) -> CloneState:
    return await clone_state(ctx, await owned_task(ctx, owner_id, task_id, cloning.KIND))


async def cancel_clone(ctx: Context, owner_id: str, task_id: str) -> CloneState:
    return await clone_state(ctx, await cancel(ctx, owner_id, task_id, task_kind(cloning.KIND)))
