#!/usr/bin/env bash
# The console's browser test drives Debian's Chromium (playwright-core cannot download a browser
# here). Install it when it is missing; `make test` and .ci/run call this.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ]; then exit 0; fi
"$(dirname "$0")/apt-install.sh" "the console test (or set CHROMIUM_PATH)" chromium
