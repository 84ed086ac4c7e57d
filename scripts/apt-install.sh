#!/usr/bin/env bash
# Installs Debian packages for a test that needs them: scripts/ensure-*.sh call it once they found
# them missing. Quiet unless it fails (apt's and debconf's chatter goes to stderr too); then it
# shows all of it. Without root or apt-get it says what to install and fails.
#   scripts/apt-install.sh "<what it is for>" package…
set -euo pipefail
what=$1
shift
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "missing for $what: install Debian's $* (apt-get install $*)" >&2
  exit 1
fi
if ! log=$({ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } 2>&1); then
  printf '%s\n' "$log" >&2
  echo "apt-get install $* failed" >&2
  exit 1
fi
