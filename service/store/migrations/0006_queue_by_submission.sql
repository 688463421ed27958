-- A task's place in the queue is its submission (a run put back keeps its place): queued_ms
-- was always created_ms, so it goes, and the queue is indexed by created_ms.
DROP INDEX tasks_queued;
ALTER TABLE tasks DROP COLUMN queued_ms;
CREATE INDEX tasks_queued ON tasks (created_ms, task_id) WHERE status = 'IN_QUEUE';
