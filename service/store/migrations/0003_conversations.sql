-- Live conversations: custom agents, session idle timeouts, and the kept conversations.

ALTER TABLE agents ADD COLUMN description TEXT;
ALTER TABLE agents ADD COLUMN runtime_kind TEXT NOT NULL DEFAULT 'managed_agent';
ALTER TABLE agents ADD COLUMN custom_agent_url TEXT;
ALTER TABLE agents ADD COLUMN custom_agent_protocol TEXT;
-- Sent to the owner's own endpoint, so it is kept as given (and never read back by the API).
ALTER TABLE agents ADD COLUMN custom_agent_bearer_token TEXT;

-- Minutes; NULL turns the idle timeout off.
ALTER TABLE sessions ADD COLUMN idle_timeout_min INTEGER;
ALTER TABLE sessions ADD COLUMN use_beta INTEGER NOT NULL DEFAULT 0;
-- The last time a visitor was seen: a socket opened or closed, or a message arrived.
ALTER TABLE sessions ADD COLUMN last_active_ms INTEGER;

-- One row per socket. An open conversation has no ended_ms; its worker stamps alive_ms now and
-- then, so one whose worker died is closed (and billed) by the sweeper.
CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES owners (owner_id),
    route_id        TEXT,
    session_id      TEXT,
    started_ms      INTEGER NOT NULL,
    alive_ms        INTEGER NOT NULL,
    ended_ms        INTEGER,
    end_reason      TEXT,
    deleted_ms      INTEGER
);
CREATE INDEX conversations_by_owner ON conversations (owner_id, started_ms DESC, conversation_id DESC);
CREATE INDEX conversations_by_route ON conversations (route_id, started_ms DESC) WHERE route_id IS NOT NULL;
CREATE INDEX conversations_by_session ON conversations (session_id, started_ms DESC)
    WHERE session_id IS NOT NULL;
CREATE INDEX conversations_open ON conversations (alive_ms) WHERE ended_ms IS NULL;

CREATE TABLE conversation_messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    text            TEXT NOT NULL,
    at_ms           INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

-- A conversation is billed once, however many processes race to close it.
CREATE UNIQUE INDEX usage_once_per_conversation ON usage_records (ref_id)
    WHERE kind = 'route_conversation';
