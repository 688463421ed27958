-- Owners' voice profiles (cloned voices: a built-in voice with pitch, range and rate matched
-- to the samples). Premade profiles are the engines' own and are not stored. (SQLite's 0007;
-- languages is a JSON array as text, as there.)
CREATE TABLE voice_profiles (
    profile_id  TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES owners (owner_id),
    name        TEXT NOT NULL,
    description TEXT,
    languages   TEXT NOT NULL,
    engine      TEXT NOT NULL,
    voice       TEXT NOT NULL,
    pitch       INTEGER NOT NULL,
    pitch_range INTEGER NOT NULL,
    rate        INTEGER NOT NULL,
    created_ms  BIGINT NOT NULL
);
CREATE INDEX voice_profiles_by_owner ON voice_profiles (owner_id, created_ms DESC, profile_id DESC);
