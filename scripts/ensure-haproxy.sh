#!/usr/bin/env bash
# The multi-node tests put Debian's haproxy in front of three servers (test/haproxy.ts runs its own
# haproxy processes with generated configs). Install it when it is missing; silent when it is there.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "haproxy is missing: install Debian's haproxy package (apt-get install haproxy) for the multi-node tests" >&2
  exit 1
fi
# Quiet unless it fails (apt's and debconf's chatter goes to stderr too); then show all of it.
if ! log=$({ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; } 2>&1); then
  printf '%s\n' "$log" >&2
  echo "apt-get install haproxy failed" >&2
  exit 1
fi
# The package starts its own service where services may start (systemd, or no policy-rc.d saying
# no): stop it and keep it from starting at boot; the tests never use it.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now haproxy >/dev/null 2>&1 || true
else
  invoke-rc.d haproxy stop >/dev/null 2>&1 || true
  update-rc.d haproxy disable >/dev/null 2>&1 || true
fi
