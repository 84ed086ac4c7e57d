#!/usr/bin/env bash
# The console's browser test drives Debian's Chromium (playwright-core cannot download a browser
# here). Install it when it is missing; `make test` and .ci/run call this.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing: install Debian's chromium package (or set CHROMIUM_PATH) for the console test" >&2
  exit 1
fi
echo "installing chromium for the console test…"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
