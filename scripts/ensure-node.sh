#!/usr/bin/env bash
# Makes .node/bin/node the project's Node: the machine's own `node` when it is the pinned major,
# otherwise the pinned release fetched from the npm registry (the node-linux-<arch> package
# carries the official binary and headers), so no compiler and no other download site is needed.
# The Makefile runs everything with .node/bin first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION=24.21.0
MAJOR=${NODE_VERSION%%.*}
if [ -x .node/bin/node ] && [ "$(.node/bin/node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$MAJOR" ]; then
  exit 0
fi
rm -rf .node
mkdir -p .node/bin
if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" = "$MAJOR" ]; then
  ln -s "$(command -v node)" .node/bin/node
  exit 0
fi
case "$(uname -m)" in
  x86_64) ARCH=x64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) echo "no Node $NODE_VERSION package for $(uname -m): install Node $MAJOR yourself" >&2; exit 1 ;;
esac
case "$(uname -s)" in
  Linux) OS=linux ;;
  Darwin) OS=darwin ;;
  *) echo "no Node $NODE_VERSION package for $(uname -s): install Node $MAJOR yourself" >&2; exit 1 ;;
esac
echo "fetching Node $NODE_VERSION (node-$OS-$ARCH from the npm registry) into .node/ …" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-$OS-$ARCH@$NODE_VERSION" >/dev/null)
tar xzf "$tmp"/node-*.tgz -C .node --strip-components=1
.node/bin/node --version >/dev/null
