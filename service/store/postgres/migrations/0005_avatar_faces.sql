-- Where each avatar's face is (SQLite's 0010; JSON as text, as there): NULL until it was
-- looked for, JSON null when the image has no face.
ALTER TABLE avatars ADD COLUMN face TEXT;
