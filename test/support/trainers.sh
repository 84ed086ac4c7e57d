#!/usr/bin/env bash
# `make test-trainers` (optional, not part of `make test`): a real GRPOTrainer step (TRL) whose
# rewards come from Gradebox's Python adapters, against a real server started here
# (test/support/serve.ts), in a fresh venv with trl and torch installed from the package index
# pip is configured with on this machine ONLY (pip would otherwise fall back to the public index,
# unreachable here, and retry for minutes). When no local index is configured or trl does not
# install from it, it says so and exits 0: the test is optional.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

skip() {
  echo "test-trainers: SKIPPED: $*" >&2
  exit 0
}

python=""
for py in "${GRADEBOX_PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c "import venv, ensurepip" >/dev/null 2>&1; then
    python=$py
    break
  fi
done
[ -n "$python" ] || skip "no python3 with venv and ensurepip"

# the local indexes pip is configured with (index-url, then extra-index-url; file:// or a local host)
indexes=()
for key in index-url extra-index-url; do
  for scope in global user site; do
    for url in $("$python" -m pip config get "$scope.$key" 2>/dev/null || true); do
      case "$url" in
        file://* | http://127.0.0.1* | http://localhost*) indexes+=("$url") ;;
      esac
    done
  done
done
[ ${#indexes[@]} -gt 0 ] || skip "pip is configured with no local package index (pip config list): trl and torch cannot be installed offline"
links=()
for scope in global user site; do
  for dir in $("$python" -m pip config get "$scope.find-links" 2>/dev/null || true); do links+=(--find-links "$dir"); done
done
pip_index=(--index-url "${indexes[0]}")
for url in "${indexes[@]:1}"; do pip_index+=(--extra-index-url "$url"); done

work=$(mktemp -d "${TMPDIR:-/tmp}/gradebox-trainers-XXXXXX")
server_pid=""
cleanup() {
  exec 3>&- 2>/dev/null || true
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# the venv is kept between runs (1.4 GB, a minute or more to install); delete it to start afresh
venv=${GRADEBOX_TRAINERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gradebox/trainers-venv}
if ! "$venv/bin/python" -c "import trl, torch, transformers, datasets, tokenizers" 2>/dev/null; then
  echo "test-trainers: installing trl and torch into $venv from ${indexes[*]}" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  # --index-url replaces the public index pip defaults to; the configuration's constraints still apply
  if ! PIP_NO_INPUT=1 "$venv/bin/pip" install --quiet --disable-pip-version-check --retries 0 --timeout 20 \
    "${pip_index[@]}" "${links[@]}" trl torch >"$work/pip.log" 2>&1; then
    tail -n 5 "$work/pip.log" >&2
    rm -rf "$venv"
    skip "trl and torch do not install from the local index (${indexes[*]})"
  fi
  "$venv/bin/python" -c "import trl, torch, transformers, datasets, tokenizers" 2>/dev/null || skip "trl installed but does not import"
fi
echo "test-trainers: $("$venv/bin/python" -c 'import trl, torch; print(f"trl {trl.__version__}, torch {torch.__version__}")')" >&2

# the server, on a free port; its first line says where and with which key. Its stdin is a fifo
# this shell holds open: when the shell goes, however it goes, the server stops.
mkfifo "$work/server.in"
PATH="$root/.node/bin:$PATH" node --no-node-snapshot --import tsx test/support/serve.ts trainers <"$work/server.in" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
exec 3>"$work/server.in"
line=""
for _ in $(seq 120); do
  line=$(head -n 1 "$work/server.out")
  [ -n "$line" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
if [ -z "$line" ]; then
  cat "$work/server.err" >&2
  echo "test-trainers: FAILED: the server did not start" >&2
  exit 1
fi
eval "$("$python" -c 'import json, shlex, sys; d = json.loads(sys.argv[1]); print("export GRADEBOX_URL=%s GRADEBOX_API_KEY=%s GRADEBOX_PROJECT=%s" % tuple(shlex.quote(d[k]) for k in ("url", "key", "project")))' "$line")"

# the client from the source tree: the venv holds trl's dependencies and nothing of ours
cd "$work"
PYTHONPATH="$root/clients/python/src" PYTHONDONTWRITEBYTECODE=1 timeout 300 "$venv/bin/python" "$root/test/support/trainers_grpo.py"
