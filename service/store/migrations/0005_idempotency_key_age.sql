-- The sweeper forgets idempotency keys past their day every pass (about once a second): by
-- their age, without reading the whole table.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_ms);
