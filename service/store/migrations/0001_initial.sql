-- Owners, API keys, avatars, agents, routes, interactive sessions and usage records.
-- Times are INTEGER epoch milliseconds; JSON documents (agent/session tools) are TEXT.

CREATE TABLE owners (
    owner_id   TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL
);

CREATE TABLE api_keys (
    key_id       TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (owner_id),
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    last_used_ms INTEGER,
    revoked_ms   INTEGER
);

CREATE TABLE avatars (
    avatar_id  TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (owner_id),
    name       TEXT,
    width      INTEGER NOT NULL,
    height     INTEGER NOT NULL,
    source     TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX avatars_by_owner ON avatars (owner_id, created_ms DESC, avatar_id DESC);

-- Agents are soft-deleted: their revoked routes stay readable and keep pointing at them.
CREATE TABLE agents (
    agent_id    TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES owners (owner_id),
    name        TEXT NOT NULL,
    avatar_id   TEXT,
    voice_id    TEXT,
    instruction TEXT,
    llm_model   TEXT,
    model       TEXT NOT NULL,
    greeting    TEXT,
    tools       TEXT,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL,
    deleted_ms  INTEGER
);
CREATE INDEX agents_by_owner ON agents (owner_id, created_ms DESC, agent_id DESC);

CREATE TABLE routes (
    route_id   TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (owner_id),
    agent_id   TEXT NOT NULL REFERENCES agents (agent_id),
    label      TEXT,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER,
    revoked_ms INTEGER
);
CREATE INDEX routes_by_owner ON routes (owner_id, created_ms DESC, route_id DESC);
CREATE INDEX routes_by_agent ON routes (agent_id, created_ms DESC, route_id DESC);

CREATE TABLE sessions (
    session_id  TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES owners (owner_id),
    avatar_id   TEXT NOT NULL,
    voice_id    TEXT,
    model       TEXT NOT NULL,
    llm_model   TEXT,
    instruction TEXT,
    tools       TEXT,
    created_ms  INTEGER NOT NULL,
    max_end_ms  INTEGER NOT NULL,
    ready_ms    INTEGER,
    stopped_ms  INTEGER,
    stop_reason TEXT
);
CREATE INDEX sessions_by_owner ON sessions (owner_id, created_ms DESC, session_id DESC);
CREATE INDEX sessions_open ON sessions (max_end_ms) WHERE stopped_ms IS NULL;

CREATE TABLE usage_records (
    usage_id         TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES owners (owner_id),
    kind             TEXT NOT NULL,
    ref_id           TEXT NOT NULL,
    started_ms       INTEGER NOT NULL,
    ended_ms         INTEGER NOT NULL,
    seconds          REAL NOT NULL,
    billable_seconds REAL NOT NULL
);
CREATE INDEX usage_by_owner ON usage_records (owner_id, ended_ms DESC, usage_id DESC);
-- A session is billed once, however many processes race to close it.
CREATE UNIQUE INDEX usage_once_per_session ON usage_records (ref_id) WHERE kind = 'session';
