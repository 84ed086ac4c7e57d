#!/usr/bin/env bash
# The multi-node tests put Debian's haproxy in front of three servers (test/support/haproxy.ts runs its own
# haproxy processes with generated configs). Install it when it is missing; silent when it is there.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then exit 0; fi
"$(dirname "$0")/apt-install.sh" "the multi-node tests" haproxy
# The package starts its own service where services may start (systemd, or no policy-rc.d saying
# no): stop it and keep it from starting at boot; the tests never use it.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now haproxy >/dev/null 2>&1 || true
else
  invoke-rc.d haproxy stop >/dev/null 2>&1 || true
  update-rc.d haproxy disable >/dev/null 2>&1 || true
fi
