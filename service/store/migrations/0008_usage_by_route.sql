-- A route conversation's usage names its route, so an owner can read time per route (the
-- conversation may be deleted later; its usage stays). Earlier records take it from their
-- conversation. (0007 is taken by another branch's migration.)
ALTER TABLE usage_records ADD COLUMN route_id TEXT;
UPDATE usage_records SET route_id = (
    SELECT c.route_id FROM conversations c WHERE c.conversation_id = usage_records.ref_id
) WHERE kind = 'route_conversation';
CREATE INDEX usage_by_route ON usage_records (route_id, ended_ms DESC, usage_id DESC)
    WHERE route_id IS NOT NULL;
