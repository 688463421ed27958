-- The conversation sockets open now, whichever HTTP worker of whichever node holds them: what
-- the caps per client address and per route count (a route's conversation is kept only from its
-- first visitor message, so the conversations table cannot count them). A hold's worker stamps
-- alive_ms with its conversations'; a hold not stamped for a minute belongs to a dead worker and
-- counts no more, and the sweeper drops it. (SQLite's 0009.)
CREATE TABLE socket_holds (
    socket_id  TEXT PRIMARY KEY,
    client     TEXT NOT NULL,
    route_id   TEXT,
    alive_ms   BIGINT NOT NULL
);
CREATE INDEX socket_holds_by_client ON socket_holds (client, alive_ms);
CREATE INDEX socket_holds_by_route ON socket_holds (route_id, alive_ms) WHERE route_id IS NOT NULL;
