-- A route conversation's usage names its route, so an owner can read time per route (the
-- conversation may be deleted later; its usage stays). Earlier records take it from their
-- conversation. (SQLite's 0008.)
ALTER TABLE usage_records ADD COLUMN route_id TEXT;
UPDATE usage_records u SET route_id = c.route_id FROM conversations c
    WHERE u.kind = 'route_conversation' AND c.conversation_id = u.ref_id;
CREATE INDEX usage_by_route ON usage_records (route_id, ended_ms DESC, usage_id DESC)
    WHERE route_id IS NOT NULL;
