"""Domain records. Times are epoch milliseconds (see `service.clock`)."""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from service.domain.faces import FaceLandmarks


class Owner(msgspec.Struct, frozen=True):
    owner_id: str
    name: str
    created_ms: int


class ApiKey(msgspec.Struct, frozen=True):
    key_id: str
    owner_id: str
    owner_name: str
    key_hash: str
    prefix: str
    created_ms: int
    last_used_ms: int | None = None
    revoked_ms: int | None = None


class Avatar(msgspec.Struct, frozen=True):
    avatar_id: str
    owner_id: str
    name: str | None
    width: int
    height: int
    source: str
    created_ms: int
    # Where its face is (the largest face found), None when it has none.
    face: FaceLandmarks | None = None
    # Whether the face was looked for: avatars stored before faces were have it found on
    # first use (service.domain.avatars.avatar_face).
    face_checked: bool = False
    # READY, or (an avatar built from a photo) PENDING until its build ends READY or ERROR.
    status: str = "READY"
    error: str | None = None  # why its build ended in ERROR


class Agent(msgspec.Struct, frozen=True):
    agent_id: str
    owner_id: str
    name: str
    created_ms: int
    updated_ms: int
    avatar_id: str | None = None
    voice_id: str | None = None
    instruction: str | None = None
    llm_model: str | None = None
    model: str = "metis-2.5"
    greeting: str | None = None
    tools: Any = None
    description: str | None = None
    runtime_kind: str = "managed_agent"  # or "custom_agent": replies from the owner's endpoint
    custom_agent_url: str | None = None
    custom_agent_protocol: str | None = None  # "vercel_ai_sdk" or "openai_chat"
    custom_agent_bearer_token: str | None = None


class Route(msgspec.Struct, frozen=True):
    route_id: str
    owner_id: str
    agent_id: str
    label: str | None
    created_ms: int
    expires_ms: int | None = None
    revoked_ms: int | None = None
    changed_ms: int | None = None  # the last label change or revoke; None: none yet
    version: int = 1  # 1 at creation, +1 per change (label change, revoke)

    def status(self, now_ms: int) -> str:
        """One of ROUTE_STATUSES, derived at read time, so expiry needs no background job."""
        if self.revoked_ms is not None:
            return "revoked"
        if self.expires_ms is not None and now_ms >= self.expires_ms:
            return "expired"
        return "active"

    @property
    def updated_ms(self) -> int:
        """The last change, or the creation while there was none."""
        return self.created_ms if self.changed_ms is None else self.changed_ms


ROUTE_STATUSES = ("active", "expired", "revoked")


class Session(msgspec.Struct, frozen=True):
    session_id: str
    owner_id: str
    avatar_id: str
    model: str
    created_ms: int
    max_end_ms: int
    voice_id: str | None = None
    llm_model: str | None = None
    instruction: str | None = None
    tools: Any = None
    ready_ms: int | None = None
    stopped_ms: int | None = None
    stop_reason: str | None = None
    idle_timeout_min: int | None = 15  # None: no idle timeout
    use_beta: bool = False
    last_active_ms: int | None = None

    def status(self, now_ms: int) -> str:
        """Derived from stored times, so every HTTP worker answers alike."""
        if self.stopped_ms is not None or now_ms >= self.max_end_ms:
            return "stopped"
        if self.ready_ms is not None and now_ms >= self.ready_ms:
            return "ready"
        return "starting"

    def effective_stop(self, now_ms: int) -> tuple[int | None, str | None]:
        """(stopped_at, stop_reason) as a reader sees them, including a not yet swept timeout."""
        if self.stopped_ms is not None:
            return self.stopped_ms, self.stop_reason
        if now_ms >= self.max_end_ms:
            return self.max_end_ms, "max_duration"
        return None, None

    def reached_ready(self, now_ms: int) -> int | None:
        """When it became ready; None while it warms up, or when it stopped before."""
        stopped_ms, _ = self.effective_stop(now_ms)
        ready_ms = self.ready_ms
        if (
            ready_ms is None
            or ready_ms > now_ms
            or (stopped_ms is not None and stopped_ms < ready_ms)
        ):
            return None
        return ready_ms


class Conversation(msgspec.Struct, frozen=True):
    """One visitor's socket through a route or a session, kept with its messages."""

    conversation_id: str
    owner_id: str
    started_ms: int
    alive_ms: int
    route_id: str | None = None
    session_id: str | None = None
    ended_ms: int | None = None
    end_reason: str | None = None


class SocketHold(msgspec.Struct, frozen=True):
    """An open conversation socket, as the caps count it (`socket_id`: its conversation's id,
    kept or not)."""

    socket_id: str
    client: str
    route_id: str | None
    alive_ms: int


class Message(msgspec.Struct, frozen=True):
    conversation_id: str
    seq: int
    role: str  # "user" | "assistant"
    text: str
    at_ms: int


# What usage is recorded for (UsageRecord.kind).
USAGE_KINDS = (
    "route_conversation",
    "session",
    "upscale",
    "tts",
    "stt",
    "talking_video",
    "motion_video",
    "image",
)


class UsageRecord(msgspec.Struct, frozen=True):
    usage_id: str
    owner_id: str
    kind: str  # one of USAGE_KINDS
    ref_id: str
    started_ms: int
    ended_ms: int
    seconds: float
    billable_seconds: float
    route_id: str | None = None  # the route of a route conversation


class UsageFilter(msgspec.Struct, frozen=True):
    """The records a usage report covers: those ended in [since_ms, until_ms), and of one
    kind, or one route, when given."""

    since_ms: int
    until_ms: int
    kind: str | None = None
    route_id: str | None = None


class UsageTotals(msgspec.Struct, frozen=True):
    route_conversation_seconds: float = 0.0
    session_seconds: float = 0.0
    upscale_billable_seconds: float = 0.0
    tts_seconds: float = 0.0
    stt_seconds: float = 0.0
    talking_video_seconds: float = 0.0
    motion_video_seconds: float = 0.0
    image_count: int = 0


class TaskError(msgspec.Struct, frozen=True):
    code: str
    message: str


class WebhookTarget(msgspec.Struct, frozen=True):
    """Where a task's final status is posted; the token is sent, never shown. `links_base`
    starts the links in the posted body: the base the submission was answered with."""

    url: str
    token: str | None = None
    links_base: str | None = None


class WebhookOutcome(msgspec.Struct, frozen=True):
    delivered: bool
    attempted_ms: int
    status_code: int | None = None
    error: str | None = None


class Task(msgspec.Struct, frozen=True):
    """An asynchronous job. `version` grows with every write, so a write made from a stale
    read is refused (see `TaskStore.save_task`); `params` is the kind's request, `input` what
    was learned about its input, `result` what it produced. Its place in the queue is its
    submission (`created_ms`): a run put back keeps it."""

    task_id: str
    owner_id: str
    kind: str
    status: str
    stage: str
    created_ms: int
    updated_ms: int
    params: dict[str, Any]
    version: int = 1
    progress: float = 0.0
    input: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: TaskError | None = None
    started_ms: int | None = None
    finished_ms: int | None = None
    worker_id: str | None = None
    lease_until_ms: int | None = None
    reruns: int = 0  # runs started again after their worker died
    webhook: WebhookTarget | None = None
    webhook_outcome: WebhookOutcome | None = None
    readable_until_ms: int | None = None
    result_deleted_ms: int | None = None


class Delivery(msgspec.Struct, frozen=True):
    """A webhook waiting in the outbox: written with the task's final status, sent once."""

    task_id: str
    owner_id: str
    target: WebhookTarget
    created_ms: int
    attempts: int = 0


class Admission(enum.Enum):
    CREATED = "created"
    REPEATED = "repeated"  # an Idempotency-Key seen before with the same request
    KEY_REUSED = "key_reused"  # ... with a different request
    QUEUE_FULL = "queue_full"


class IdempotencyKey(msgspec.Struct, frozen=True):
    key: str
    fingerprint: str  # a digest of the request, to tell a repeat from a different request


class VoiceProfile(msgspec.Struct, frozen=True):
    """An owner's voice profile (a cloned voice): how it speaks is `engine`'s voice `voice`
    with `pitch`, `pitch_range` (0-100) and `rate` (words per minute); see domain/voices.py.
    Premade profiles are not stored: the engines offer them."""

    profile_id: str
    owner_id: str
    name: str
    description: str | None
    languages: tuple[str, ...]
    engine: str
    voice: str
    pitch: int
    pitch_range: int
    rate: int
    created_ms: int
