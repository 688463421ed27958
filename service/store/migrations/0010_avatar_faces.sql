-- Where each avatar's face is (service.domain.faces.FaceLandmarks as JSON), found when the
-- avatar is stored: NULL until it was looked for (avatars stored before this are looked at
-- on first use), JSON null when the image has no face.
ALTER TABLE avatars ADD COLUMN face TEXT;
