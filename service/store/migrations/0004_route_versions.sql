-- Routes remember their last change (a label change or the revoke) and count their changes.
-- NULL changed_ms: unchanged since creation.

ALTER TABLE routes ADD COLUMN changed_ms INTEGER;
ALTER TABLE routes ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- A route revoked before this migration has had at least that change (its label changes,
-- if any, were not recorded).
UPDATE routes SET changed_ms = revoked_ms, version = 2 WHERE revoked_ms IS NOT NULL;
