"""The store interface the domain is written against. Methods speak domain records; SQL (or
any other storage detail) lives only in implementations, such as `service.store.sqlite`.

Every method is a coroutine so that an implementation over a network database can await. List
methods return up to `page.limit + 1` records (newest first, strictly after `page.after`), so
the caller can tell whether another page exists. The interface is split by area; `Store` is
what a full implementation provides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from service.domain.faces import FaceLandmarks
from service.domain.models import (
    Admission,
    Agent,
    ApiKey,
    Avatar,
    Conversation,
    Delivery,
    IdempotencyKey,
    Message,
    Owner,
    Route,
    Session,
    SocketHold,
    Task,
    UsageFilter,
    UsageRecord,
    UsageTotals,
    VoiceProfile,
    WebhookOutcome,
)
from service.domain.pagination import PageRequest


class AccountStore(Protocol):
    """Owners and API keys."""

    async def get_owner_by_name(self, name: str) -> Owner | None: ...
    async def add_owner(self, owner: Owner) -> None: ...
    async def count_owners(self) -> int: ...
    async def add_key(self, key: ApiKey) -> None: ...
    async def get_key_by_hash(self, key_hash: str) -> ApiKey | None: ...
    async def list_keys(self) -> list[ApiKey]: ...
    async def revoke_key(self, key_id: str, now_ms: int) -> ApiKey | None: ...
    async def touch_key(self, key_id: str, now_ms: int, min_interval_ms: int) -> None: ...


class CatalogStore(Protocol):
    """Avatars, agents and routes. Deleting an agent also revokes its routes, atomically."""

    async def add_avatar(self, avatar: Avatar) -> None: ...
    async def get_avatar(self, avatar_id: str) -> Avatar | None: ...
    async def get_avatars(self, avatar_ids: list[str]) -> list[Avatar]:
        """Those of `avatar_ids` that exist, in one read."""
        ...

    async def list_avatars(self, owner_id: str, page: PageRequest) -> list[Avatar]: ...
    async def delete_avatar(self, owner_id: str, avatar_id: str) -> Avatar | None: ...
    async def set_avatar_face(self, avatar_id: str, face: FaceLandmarks | None) -> None:
        """Keep the face found in the avatar's image (None: it has none)."""
        ...

    async def end_avatar_build(
        self, avatar_id: str, status: str, error: str | None, face: FaceLandmarks | None
    ) -> bool:
        """End a PENDING avatar's build: `status` READY (with the face found) or ERROR (with
        `error`). False when the avatar is gone or its build had already ended."""
        ...

    async def add_agent(self, agent: Agent) -> None: ...
    async def get_agent(self, agent_id: str) -> Agent | None: ...
    async def list_agents(self, owner_id: str, page: PageRequest) -> list[Agent]: ...
    async def replace_agent(self, agent: Agent) -> bool: ...
    async def delete_agent(self, owner_id: str, agent_id: str, now_ms: int) -> Agent | None: ...

    async def add_route(self, route: Route) -> bool: ...
    async def get_route(self, route_id: str) -> Route | None: ...
    async def list_routes(
        self,
        owner_id: str,
        page: PageRequest,
        *,
        now_ms: int,
        agent_id: str | None = None,
        status: str | None = None,
    ) -> list[Route]: ...
    async def set_route_label(
        self, owner_id: str, route_id: str, label: str | None, now_ms: int
    ) -> Route | None: ...
    async def revoke_route(self, owner_id: str, route_id: str, now_ms: int) -> Route | None: ...


class SessionStore(Protocol):
    """Interactive sessions. Stopping one records its usage in the same write."""

    async def add_session(self, session: Session) -> None: ...
    async def get_session(self, session_id: str) -> Session | None: ...
    async def list_open_sessions(
        self, owner_id: str, page: PageRequest, *, now_ms: int
    ) -> list[Session]: ...
    async def mark_session_ready(self, session_id: str, ready_ms: int) -> None: ...
    async def stop_session(
        self, session_id: str, stopped_ms: int, reason: str, usage: UsageRecord
    ) -> bool: ...
    async def sessions_past_max(self, now_ms: int, limit: int) -> list[Session]: ...
    async def unprepared_sessions(self, created_before_ms: int, limit: int) -> list[Session]: ...
    async def idle_sessions(self, now_ms: int, limit: int) -> list[Session]:
        """Open sessions past their idle timeout with no conversation open."""
        ...

    def live_mark(self) -> bytes:
        """A value that changes whenever a route, an agent or a session changes, in any
        process: what open conversations watch to end when theirs does. Cheap to read."""
        ...


class ConversationStore(Protocol):
    """Conversations and their messages. Closing one records its usage in the same write, once
    however many processes race to close it; a session's last activity follows its sockets and
    visitor messages."""

    async def add_conversation(self, conversation: Conversation) -> None: ...
    async def get_conversation(self, conversation_id: str) -> Conversation | None: ...
    async def list_conversations(
        self,
        owner_id: str,
        page: PageRequest,
        *,
        route_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Conversation]: ...
    async def add_message(self, message: Message, session_id: str | None) -> None: ...
    async def list_messages(
        self, conversation_id: str, last: int | None = None
    ) -> list[Message]: ...
    async def close_conversation(
        self, conversation: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
    ) -> bool: ...
    async def keep_alive(self, conversation_ids: list[str], now_ms: int) -> None:
        """Stamp the open conversations alive, and their sockets' holds (`SocketStore`)."""
        ...

    async def conversations_gone_quiet(
        self, alive_before_ms: int, limit: int
    ) -> list[Conversation]: ...
    async def delete_conversation(
        self, owner_id: str, conversation_id: str, now_ms: int
    ) -> Conversation | None: ...


class SocketStore(Protocol):
    """The open conversation sockets of every worker, as their caps count them. A hold is named
    by its socket's conversation id, stamped alive with it by `keep_alive`, and counts while it
    was stamped since `live_since_ms`."""

    async def hold_socket(
        self, hold: SocketHold, per_client: int, per_route: int, live_since_ms: int
    ) -> str | None:
        """Keep `hold` unless its client already has `per_client` live holds ("client" is
        returned) or its route `per_route` ("route"); None when it was kept. Atomic."""
        ...

    async def release_socket(self, socket_id: str) -> None: ...
    async def drop_quiet_sockets(self, alive_before_ms: int) -> int: ...


class UsageStore(Protocol):
    """Usage records, and their totals, of an owner that a `UsageFilter` selects."""

    async def add_usage(self, usage: UsageRecord) -> None: ...
    async def list_usage(
        self, owner_id: str, which: UsageFilter, page: PageRequest
    ) -> list[UsageRecord]: ...
    async def usage_totals(self, owner_id: str, which: UsageFilter) -> UsageTotals: ...


class TaskStore(Protocol):
    """Tasks. Every change is a compare-and-set on `Task.version`: `save_task` writes only if
    the stored task is still at `expected_version` (else it returns False and the caller
    re-reads), together with the webhook owed and the usage earned by a final status. Claims
    are exclusive: the PostgreSQL store claims with `FOR UPDATE SKIP LOCKED`, SQLite under its
    one writer."""

    async def add_task(
        self,
        task: Task,
        idempotency: IdempotencyKey | None,
        *,
        queue_limit: int,
        remembered_since_ms: int,
    ) -> tuple[Admission, Task | None]:
        """Insert `task` unless its Idempotency-Key (seen since `remembered_since_ms`) names an
        earlier task, or the owner already has `queue_limit` tasks waiting; all atomically."""
        ...

    async def get_task(self, task_id: str) -> Task | None: ...
    async def list_tasks(self, owner_id: str, kind: str, page: PageRequest) -> list[Task]: ...
    async def queue_position(self, task: Task) -> int: ...
    async def save_task(
        self,
        task: Task,
        expected_version: int,
        delivery: Delivery | None = None,
        usage: UsageRecord | None = None,
    ) -> bool: ...
    async def claim_task(
        self,
        worker_id: str,
        lease_until_ms: int,
        start: Callable[[Task], Task],
        kinds: tuple[str, ...] | None = None,
    ) -> Task | None:
        """Lease the oldest waiting task (of `kinds`, when given) to `worker_id` and save
        `start(task)` (its move to IN_PROGRESS) in the same transaction; None when nothing
        waits."""
        ...

    async def tasks_in_progress(self, lease_before_ms: int, limit: int) -> list[Task]: ...
    async def results_past(self, now_ms: int, limit: int) -> list[Task]: ...
    async def known_task_ids(self, task_ids: list[str]) -> set[str]: ...
    async def forget_idempotency_keys(self, before_ms: int) -> int: ...
    async def wait_for_tasks(self, timeout_s: float) -> None:
        """Return soon after a task is queued or changed by any process, or after the timeout."""
        ...


class WebhookStore(Protocol):
    """The outbox of webhooks owed by final tasks, and each owner's webhook secret nonce."""

    async def claim_delivery(self, now_ms: int, claim_until_ms: int) -> Delivery | None:
        """The oldest unsent delivery nobody holds a live claim on, now claimed until
        `claim_until_ms` with its `attempts` counted; None when there is none."""
        ...

    async def record_delivery(
        self, task_id: str, outcome: WebhookOutcome, done_ms: int
    ) -> None: ...
    async def release_delivery_claims(self) -> int: ...
    async def wait_for_deliveries(self, timeout_s: float) -> None: ...
    async def webhook_nonce(self, owner_id: str) -> str | None:
        """The owner's nonce; None until the owner first rotates (a read: it writes nothing,
        so reading the secret stays a read)."""
        ...

    async def rotate_webhook_nonce(self, owner_id: str, nonce: str, now_ms: int) -> None: ...


class VoiceStore(Protocol):
    """Owners' voice profiles."""

    async def add_voice_profile(self, profile: VoiceProfile) -> None: ...
    async def get_voice_profile(self, profile_id: str) -> VoiceProfile | None: ...
    async def list_voice_profiles(self, owner_id: str) -> list[VoiceProfile]:
        """The owner's profiles, newest first."""
        ...

    async def delete_voice_profile(
        self, owner_id: str, profile_id: str, replacement_id: str
    ) -> VoiceProfile | None:
        """Delete the owner's profile and, in the same write, give the owner's agents and
        sessions that spoke with it `replacement_id`; None when the owner has no such profile."""
        ...


class Store(
    AccountStore,
    CatalogStore,
    SessionStore,
    ConversationStore,
    SocketStore,
    UsageStore,
    TaskStore,
    WebhookStore,
    VoiceStore,
    Protocol,
):
    """Everything the service keeps, as one implementation provides it."""

    async def close(self) -> None: ...
