"""The columns of each table and how a row becomes a domain record (and back), shared by the
SQLite and PostgreSQL stores: both keep the same columns with the same meanings (times as
epoch milliseconds, JSON documents as text), so only their SQL differs."""

from __future__ import annotations

from typing import Any

import msgspec

from service.domain.faces import FaceLandmarks
from service.domain.models import (
    Agent,
    Avatar,
    Conversation,
    Delivery,
    Session,
    Task,
    TaskError,
    UsageTotals,
    VoiceProfile,
    WebhookOutcome,
    WebhookTarget,
)


def dump_json(value: Any) -> str | None:
    return None if value is None else msgspec.json.encode(value).decode()


def load_json(text: str | None) -> Any:
    return None if text is None else msgspec.json.decode(text)


AVATAR_COLUMNS = "avatar_id, owner_id, name, width, height, source, created_ms, face, status, error"
ROUTE_COLUMNS = (
    "route_id, owner_id, agent_id, label, created_ms, expires_ms, revoked_ms, changed_ms, version"
)
USAGE_COLUMNS = (
    "usage_id, owner_id, kind, ref_id, started_ms, ended_ms, seconds, billable_seconds, route_id"
)
MESSAGE_COLUMNS = "conversation_id, seq, role, text, at_ms"
DELIVERY_COLUMNS = "task_id, owner_id, target, created_ms, attempts"


def avatar_of(row: tuple) -> Avatar:
    """The face column is NULL until the face was looked for, then the landmarks as JSON, or
    JSON null when the image has no face."""
    *fields, face, status, error = row
    if face is None:
        return Avatar(*fields, status=status, error=error)
    found = msgspec.json.decode(face, type=FaceLandmarks | None)
    return Avatar(*fields, found, True, status=status, error=error)


def avatar_face_value(face: FaceLandmarks | None, checked: bool = True) -> str | None:
    return msgspec.json.encode(face).decode() if checked else None


AGENT_FIELDS = (
    "agent_id", "owner_id", "name", "created_ms", "updated_ms", "avatar_id", "voice_id",
    "instruction", "llm_model", "model", "greeting", "tools", "description", "runtime_kind",
    "custom_agent_url", "custom_agent_protocol", "custom_agent_bearer_token",
)  # fmt: skip


def agent_of(row: tuple) -> Agent:
    values = dict(zip(AGENT_FIELDS, row, strict=True))
    return Agent(**values | {"tools": load_json(values["tools"])})


def agent_values(agent: Agent) -> dict:
    return msgspec.structs.asdict(agent) | {"tools": dump_json(agent.tools)}


SESSION_FIELDS = (
    "session_id", "owner_id", "avatar_id", "model", "created_ms", "max_end_ms", "voice_id",
    "llm_model", "instruction", "tools", "ready_ms", "stopped_ms", "stop_reason",
    "idle_timeout_min", "use_beta", "last_active_ms",
)  # fmt: skip


def session_of(row: tuple) -> Session:
    values = dict(zip(SESSION_FIELDS, row, strict=True))
    return Session(
        **values | {"tools": load_json(values["tools"]), "use_beta": bool(values["use_beta"])}
    )


def session_values(session: Session) -> dict:
    values = msgspec.structs.asdict(session)
    return values | {"tools": dump_json(session.tools), "use_beta": int(session.use_beta)}


CONVERSATION_FIELDS = (
    "conversation_id", "owner_id", "started_ms", "alive_ms", "route_id", "session_id",
    "ended_ms", "end_reason",
)  # fmt: skip


def conversation_of(row: tuple) -> Conversation:
    return Conversation(*row)


TASK_COLUMNS = (
    "task_id", "owner_id", "kind", "status", "stage", "version", "progress", "params", "input",
    "result", "error", "created_ms", "updated_ms", "started_ms", "finished_ms",
    "worker_id", "lease_until_ms", "reruns", "webhook", "webhook_outcome", "readable_until_ms",
    "result_deleted_ms",
)  # fmt: skip
_TASK_JSON_TYPES = {
    "params": dict,
    "input": dict | None,
    "result": dict | None,
    "error": TaskError | None,
    "webhook": WebhookTarget | None,
    "webhook_outcome": WebhookOutcome | None,
}
_TASK_DECODERS = {name: msgspec.json.Decoder(kind) for name, kind in _TASK_JSON_TYPES.items()}


def task_of(row: tuple) -> Task:
    values = dict(zip(TASK_COLUMNS, row, strict=True))
    for name, decoder in _TASK_DECODERS.items():
        if values[name] is not None:
            values[name] = decoder.decode(values[name])
    return Task(**values)


def task_values(task: Task) -> dict:
    values = msgspec.structs.asdict(task)
    for name in _TASK_JSON_TYPES:
        values[name] = dump_json(values[name])
    return values


_TARGET = msgspec.json.Decoder(WebhookTarget)


def delivery_of(row: tuple) -> Delivery:
    task_id, owner_id, target, created_ms, attempts = row
    return Delivery(task_id, owner_id, _TARGET.decode(target), created_ms, attempts)


def usage_totals_of(rows: list[tuple]) -> UsageTotals:
    """The totals of (kind, sum of seconds, sum of billable seconds, count) rows, one per
    kind."""
    by_kind = {kind: (seconds, billable) for kind, seconds, billable, _ in rows}
    counts = {kind: count for kind, _, _, count in rows}

    def total(kind: str, billable: bool = False) -> float:
        return round(by_kind.get(kind, (0.0, 0.0))[1 if billable else 0], 3)

    return UsageTotals(
        route_conversation_seconds=total("route_conversation"),
        session_seconds=total("session"),
        upscale_billable_seconds=total("upscale", billable=True),
        tts_seconds=total("tts"),
        stt_seconds=total("stt"),
        talking_video_seconds=total("talking_video"),
        motion_video_seconds=total("motion_video"),
        image_count=counts.get("image", 0),
    )


VOICE_PROFILE_FIELDS = (
    "profile_id", "owner_id", "name", "description", "languages", "engine", "voice", "pitch",
    "pitch_range", "rate", "created_ms",
)  # fmt: skip


def voice_profile_of(row: tuple) -> VoiceProfile:
    values = dict(zip(VOICE_PROFILE_FIELDS, row, strict=True))
    return VoiceProfile(**values | {"languages": tuple(load_json(values["languages"]))})


def voice_profile_values(profile: VoiceProfile) -> dict:
    return msgspec.structs.asdict(profile) | {"languages": dump_json(list(profile.languages))}
