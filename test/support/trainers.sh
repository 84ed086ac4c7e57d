#!/usr/bin/env bash
# `make test-trainers` (optional, not part of `make test`), against a real server started here
# (test/support/serve.ts), in a venv with the trainers' packages installed from the package index
# pip is configured with on this machine ONLY (pip would otherwise fall back to the public index,
# unreachable here, and retry for minutes):
# - trl: a real GRPOTrainer step whose rewards come from Gradebox's Python adapters (trl, torch);
# - adaptive: Adaptive's reward server as an endpoint grader and its RewardClient at a grade
#   token's URL, over HTTP and WebSocket (fastapi, uvicorn, websockets, httpx, pydantic, …).
# GRADEBOX_TRAINERS picks some ("adaptive"); default both. A part whose packages do not install
# says so and is skipped; with no local index at all, everything is: the test is optional.
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

# the venv is kept between runs (1.4 GB with torch, a minute or more to install); delete it to start afresh
venv=${GRADEBOX_TRAINERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gradebox/trainers-venv}
parts=${GRADEBOX_TRAINERS:-trl adaptive}
[ -x "$venv/bin/python" ] || { mkdir -p "$(dirname "$venv")" && "$python" -m venv "$venv"; }
# --index-url replaces the public index pip defaults to; the configuration's constraints still apply
pip_install() {
  PIP_NO_INPUT=1 "$venv/bin/pip" install --quiet --disable-pip-version-check --retries 0 --timeout 20 \
    "${pip_index[@]}" "${links[@]}" "$@" >"$work/pip.log" 2>&1 || { tail -n 5 "$work/pip.log" >&2; return 1; }
}
# installs a part's packages unless they import; false (and why, on stderr) when they cannot be had
ready() {
  local part=$1 imports=$2
  shift 2
  "$venv/bin/python" -c "import $imports" 2>/dev/null && return 0
  echo "test-trainers: installing $* into $venv from ${indexes[*]}" >&2
  if ! pip_install "$@" || ! "$venv/bin/python" -c "import $imports" 2>/dev/null; then
    echo "test-trainers: $part: SKIPPED: $* do not install (or import) from the local index (${indexes[*]})" >&2
    return 1
  fi
}
run_trl=false run_adaptive=false
case " $parts " in *" trl "*) ready trl "trl, torch, transformers, datasets, tokenizers" trl torch && run_trl=true ;; esac
case " $parts " in
  *" adaptive "*) ready adaptive "fastapi, uvicorn, websockets, httpx, pydantic, jsonschema, loguru" \
    fastapi uvicorn websockets httpx pydantic jsonschema loguru && run_adaptive=true ;;
esac
$run_trl || $run_adaptive || skip "nothing to run (GRADEBOX_TRAINERS=\"$parts\")"
$run_trl && echo "test-trainers: $("$venv/bin/python" -c 'import trl, torch; print(f"trl {trl.__version__}, torch {torch.__version__}")')" >&2

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

# the client from the source tree: the venv holds the trainers' packages and nothing of ours
cd "$work"
export PYTHONPATH="$root/clients/python/src" PYTHONDONTWRITEBYTECODE=1
failed=0
if $run_trl; then timeout 300 "$venv/bin/python" "$root/test/support/trainers_grpo.py" || failed=1; fi
if $run_adaptive; then
  PYTHONPATH="$PYTHONPATH:$root/test/support" timeout 300 "$venv/bin/python" "$root/test/support/trainers_adaptive.py" || failed=1
fi
exit $failed
