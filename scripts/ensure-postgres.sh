#!/usr/bin/env bash
# The PostgreSQL tests start throwaway clusters (test/support/pg.ts) with Debian's server binaries: initdb,
# postgres and pg_ctl, which Debian puts in /usr/lib/postgresql/<version>/bin, not on PATH.
# Install them when they are missing; silent when they are there.
set -euo pipefail
have_pg() {
  if command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    return 0
  fi
  local bin
  for bin in /usr/lib/postgresql/*/bin; do
    if [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] && [ -x "$bin/pg_ctl" ]; then return 0; fi
  done
  return 1
}
if have_pg; then exit 0; fi
"$(dirname "$0")/apt-install.sh" "the PostgreSQL tests (initdb, postgres, pg_ctl)" postgresql
# The package creates a cluster "main" (port 5432) and starts it where services may start: stop it
# (it only costs memory; the tests run their own clusters) and keep it from starting at boot.
if command -v pg_lsclusters >/dev/null 2>&1; then
  pg_lsclusters --no-header 2>/dev/null | while read -r version cluster _port status _rest; do
    if [ "${status#online}" != "$status" ]; then
      pg_ctlcluster "$version" "$cluster" stop >/dev/null 2>&1 || true
    fi
    conf="/etc/postgresql/$version/$cluster/start.conf"
    if [ -f "$conf" ]; then echo manual >"$conf"; fi
  done
fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now postgresql >/dev/null 2>&1 || true
fi
have_pg || { echo "apt-get installed postgresql but initdb/postgres/pg_ctl are still not found" >&2; exit 1; }
