-- An avatar built from a photo (POST /v1/avatar/async_build) is PENDING until its build ends
-- READY or ERROR (with `error` saying why); every other avatar is READY from the start.
ALTER TABLE avatars ADD COLUMN status TEXT NOT NULL DEFAULT 'READY';
ALTER TABLE avatars ADD COLUMN error TEXT;
