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
"$(dirname "$0")/apt-install.sh" "the Python client test (or set GRADEBOX_PYTHON to a python3 with pytest, venv and setuptools)" python3-pytest python3-venv python3-setuptools python3-wheel
/usr/bin/python3 -c "$probe"
