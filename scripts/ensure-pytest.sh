#!/usr/bin/env bash
# The Python client's test (test/python-client.test.ts) installs clients/python offline into a
# venv and runs pytest there: it needs a python3 with pytest, venv/ensurepip and setuptools (plus
# wheel under setuptools 70.1). Install Debian's when neither $GRADEBOX_PYTHON, the python3 on
# PATH nor /usr/bin/python3 has them. Silent on success; `make test` and .ci/run call this.
set -euo pipefail
probe='import pytest, venv, ensurepip, setuptools; (tuple(map(int, setuptools.__version__.split(".")[:2])) >= (70, 1)) or __import__("wheel")'
for py in "${GRADEBOX_PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c "$probe" >/dev/null 2>&1; then exit 0; fi
done
packages="python3-pytest python3-venv python3-setuptools python3-wheel"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "no python3 with pytest, venv and setuptools for the Python client test: install Debian's $packages (or set GRADEBOX_PYTHON)" >&2
  exit 1
fi
if ! out=$( (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages) 2>&1); then
  echo "$out" >&2
  exit 1
fi
/usr/bin/python3 -c "$probe"
