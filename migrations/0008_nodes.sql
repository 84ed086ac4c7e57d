-- The nodes sharing a registry and the last change each has heard. Only a PostgreSQL registry
-- has several nodes (postgres/0008_nodes.sql uses it); SQLite has the table so that both count
-- their migrations alike.
CREATE TABLE registry_nodes (
  node     TEXT PRIMARY KEY,
  seen     INTEGER NOT NULL,
  alive_at TEXT NOT NULL
) STRICT;
