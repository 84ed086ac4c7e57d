-- The nodes sharing this registry, and the last change each has heard: a write is acknowledged
-- once every live node has dropped what the write made stale (server/db/postgres.ts).
CREATE SEQUENCE registry_changes;

CREATE TABLE registry_nodes (
  node     TEXT PRIMARY KEY,
  seen     BIGINT NOT NULL,
  alive_at TIMESTAMPTZ NOT NULL
);
