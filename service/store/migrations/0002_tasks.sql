-- Asynchronous tasks, the idempotency keys of their submissions, and the webhook outbox.

CREATE TABLE tasks (
    task_id           TEXT PRIMARY KEY,
    owner_id          TEXT NOT NULL REFERENCES owners (owner_id),
    kind              TEXT NOT NULL,
    status            TEXT NOT NULL,
    stage             TEXT NOT NULL,
    version           INTEGER NOT NULL,
    progress          REAL NOT NULL,
    params            TEXT NOT NULL,
    input             TEXT,
    result            TEXT,
    error             TEXT,
    created_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL,
    queued_ms         INTEGER NOT NULL,
    started_ms        INTEGER,
    finished_ms       INTEGER,
    worker_id         TEXT,
    lease_until_ms    INTEGER,
    reruns            INTEGER NOT NULL,
    webhook           TEXT,
    webhook_outcome   TEXT,
    readable_until_ms INTEGER,
    result_deleted_ms INTEGER
);
CREATE INDEX tasks_by_owner ON tasks (owner_id, kind, created_ms DESC, task_id DESC);
CREATE INDEX tasks_queued ON tasks (queued_ms, task_id) WHERE status = 'IN_QUEUE';
CREATE INDEX tasks_queued_by_owner ON tasks (owner_id) WHERE status = 'IN_QUEUE';
CREATE INDEX tasks_running ON tasks (lease_until_ms) WHERE status = 'IN_PROGRESS';
CREATE INDEX tasks_readable ON tasks (readable_until_ms)
    WHERE readable_until_ms IS NOT NULL AND result_deleted_ms IS NULL;

-- A key is remembered for 24 hours; an older row is replaced by the next use of the key.
CREATE TABLE idempotency_keys (
    owner_id    TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id     TEXT NOT NULL REFERENCES tasks (task_id),
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (owner_id, key)
);

-- One row per webhook owed: written in the transaction that makes its task final.
CREATE TABLE webhook_outbox (
    task_id          TEXT PRIMARY KEY REFERENCES tasks (task_id),
    owner_id         TEXT NOT NULL,
    target           TEXT NOT NULL,
    created_ms       INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    claimed_until_ms INTEGER,
    done_ms          INTEGER
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (created_ms) WHERE done_ms IS NULL;

-- The generation of each owner's webhook secret (the secret derives from it and the
-- service's signing key, so no secret is stored).
CREATE TABLE webhook_secrets (
    owner_id   TEXT PRIMARY KEY REFERENCES owners (owner_id),
    nonce      TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
