-- The schema of migrations/0001-0006 of the SQLite store, in PostgreSQL's dialect. Columns
-- keep SQLite's types and meanings (epoch milliseconds as BIGINT, JSON documents as TEXT,
-- flags as INTEGER 0/1), so rows read the same through either store and `store copy` moves
-- them unchanged. Later changes come as numbered files beside this one, as for SQLite.

CREATE TABLE owners (
    owner_id   TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL
);

CREATE TABLE api_keys (
    key_id       TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (owner_id),
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_ms   BIGINT NOT NULL,
    last_used_ms BIGINT,
    revoked_ms   BIGINT
);

CREATE TABLE avatars (
    avatar_id  TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (owner_id),
    name       TEXT,
    width      INTEGER NOT NULL,
    height     INTEGER NOT NULL,
    source     TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX avatars_by_owner ON avatars (owner_id, created_ms DESC, avatar_id DESC);

CREATE TABLE agents (
    agent_id                  TEXT PRIMARY KEY,
    owner_id                  TEXT NOT NULL REFERENCES owners (owner_id),
    name                      TEXT NOT NULL,
    avatar_id                 TEXT,
    voice_id                  TEXT,
    instruction               TEXT,
    llm_model                 TEXT,
    model                     TEXT NOT NULL,
    greeting                  TEXT,
    tools                     TEXT,
    created_ms                BIGINT NOT NULL,
    updated_ms                BIGINT NOT NULL,
    deleted_ms                BIGINT,
    description               TEXT,
    runtime_kind              TEXT NOT NULL DEFAULT 'managed_agent',
    custom_agent_url          TEXT,
    custom_agent_protocol     TEXT,
    custom_agent_bearer_token TEXT
);
CREATE INDEX agents_by_owner ON agents (owner_id, created_ms DESC, agent_id DESC);

CREATE TABLE routes (
    route_id   TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (owner_id),
    agent_id   TEXT NOT NULL REFERENCES agents (agent_id),
    label      TEXT,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT,
    revoked_ms BIGINT,
    changed_ms BIGINT,
    version    INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX routes_by_owner ON routes (owner_id, created_ms DESC, route_id DESC);
CREATE INDEX routes_by_agent ON routes (agent_id, created_ms DESC, route_id DESC);

CREATE TABLE sessions (
    session_id       TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES owners (owner_id),
    avatar_id        TEXT NOT NULL,
    voice_id         TEXT,
    model            TEXT NOT NULL,
    llm_model        TEXT,
    instruction      TEXT,
    tools            TEXT,
    created_ms       BIGINT NOT NULL,
    max_end_ms       BIGINT NOT NULL,
    ready_ms         BIGINT,
    stopped_ms       BIGINT,
    stop_reason      TEXT,
    idle_timeout_min INTEGER,
    use_beta         INTEGER NOT NULL DEFAULT 0,
    last_active_ms   BIGINT
);
CREATE INDEX sessions_by_owner ON sessions (owner_id, created_ms DESC, session_id DESC);
CREATE INDEX sessions_open ON sessions (max_end_ms) WHERE stopped_ms IS NULL;

CREATE TABLE usage_records (
    usage_id         TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES owners (owner_id),
    kind             TEXT NOT NULL,
    ref_id           TEXT NOT NULL,
    started_ms       BIGINT NOT NULL,
    ended_ms         BIGINT NOT NULL,
    seconds          DOUBLE PRECISION NOT NULL,
    billable_seconds DOUBLE PRECISION NOT NULL
);
CREATE INDEX usage_by_owner ON usage_records (owner_id, ended_ms DESC, usage_id DESC);
-- A session or a conversation is billed once, however many processes race to close it.
CREATE UNIQUE INDEX usage_once_per_session ON usage_records (ref_id) WHERE kind = 'session';
CREATE UNIQUE INDEX usage_once_per_conversation ON usage_records (ref_id)
    WHERE kind = 'route_conversation';

CREATE TABLE tasks (
    task_id           TEXT PRIMARY KEY,
    owner_id          TEXT NOT NULL REFERENCES owners (owner_id),
    kind              TEXT NOT NULL,
    status            TEXT NOT NULL,
    stage             TEXT NOT NULL,
    version           INTEGER NOT NULL,
    progress          DOUBLE PRECISION NOT NULL,
    params            TEXT NOT NULL,
    input             TEXT,
    result            TEXT,
    error             TEXT,
    created_ms        BIGINT NOT NULL,
    updated_ms        BIGINT NOT NULL,
    started_ms        BIGINT,
    finished_ms       BIGINT,
    worker_id         TEXT,
    lease_until_ms    BIGINT,
    reruns            INTEGER NOT NULL,
    webhook           TEXT,
    webhook_outcome   TEXT,
    readable_until_ms BIGINT,
    result_deleted_ms BIGINT
);
CREATE INDEX tasks_by_owner ON tasks (owner_id, kind, created_ms DESC, task_id DESC);
CREATE INDEX tasks_queued ON tasks (created_ms, task_id) WHERE status = 'IN_QUEUE';
CREATE INDEX tasks_queued_by_owner ON tasks (owner_id) WHERE status = 'IN_QUEUE';
CREATE INDEX tasks_running ON tasks (lease_until_ms) WHERE status = 'IN_PROGRESS';
CREATE INDEX tasks_readable ON tasks (readable_until_ms)
    WHERE readable_until_ms IS NOT NULL AND result_deleted_ms IS NULL;

CREATE TABLE idempotency_keys (
    owner_id    TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id     TEXT NOT NULL REFERENCES tasks (task_id),
    created_ms  BIGINT NOT NULL,
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_ms);

CREATE TABLE webhook_outbox (
    task_id          TEXT PRIMARY KEY REFERENCES tasks (task_id),
    owner_id         TEXT NOT NULL,
    target           TEXT NOT NULL,
    created_ms       BIGINT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    claimed_until_ms BIGINT,
    done_ms          BIGINT
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (created_ms) WHERE done_ms IS NULL;

CREATE TABLE webhook_secrets (
    owner_id   TEXT PRIMARY KEY REFERENCES owners (owner_id),
    nonce      TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);

CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES owners (owner_id),
    route_id        TEXT,
    session_id      TEXT,
    started_ms      BIGINT NOT NULL,
    alive_ms        BIGINT NOT NULL,
    ended_ms        BIGINT,
    end_reason      TEXT,
    deleted_ms      BIGINT
);
CREATE INDEX conversations_by_owner
    ON conversations (owner_id, started_ms DESC, conversation_id DESC);
CREATE INDEX conversations_by_route ON conversations (route_id, started_ms DESC)
    WHERE route_id IS NOT NULL;
CREATE INDEX conversations_by_session ON conversations (session_id, started_ms DESC)
    WHERE session_id IS NOT NULL;
CREATE INDEX conversations_open ON conversations (alive_ms) WHERE ended_ms IS NULL;

CREATE TABLE conversation_messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    text            TEXT NOT NULL,
    at_ms           BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

-- What every node must share and SQLite keeps in the data dir: the signing key (file links,
-- session tokens and webhook secrets derive from it), made once by the first node to start.
CREATE TABLE service_keys (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
