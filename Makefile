# The two front-door commands: `make run` and `make test`. Both install what is needed first:
# the pinned Node into .node/ (scripts/ensure-node.sh), then the npm dependencies (prebuilt
# native modules: no compiler needed).
export PATH := $(CURDIR)/.node/bin:$(PATH)
NODE := node --no-node-snapshot --import tsx
# FILES="test/a.test.ts …" runs only those (make test, test-fast and test-postgres alike)
ALL_TESTS := $(sort $(wildcard test/*.test.ts))
TESTS := $(if $(FILES),$(FILES),$(ALL_TESTS))
# the suites that need a browser, packed packages, Python, PostgreSQL or HAProxy, or take minutes
SLOW_TESTS := $(addprefix test/,$(addsuffix .test.ts,console console-charts packages python-client multinode infra cli-bundle docs offheap install python-exit))

.PHONY: install run build test test-fast test-postgres test-trainers check bench soak clean package

.node/bin/node: scripts/ensure-node.sh
	scripts/ensure-node.sh
	@touch -h $@

node_modules/.installed: package.json package-lock.json .node/bin/node
	# npm install, not npm ci: the registry here lacks some of biome's optional per-platform binaries,
	# which npm ci insists on finding in the lock file. The lock file still pins every version, and
	# --no-save keeps it as committed: another npm than the lock's producer (Node 20's npm 10, say)
	# would otherwise rewrite it and leave a fresh clone's git status dirty (test/install.test.ts).
	# A native module without a prebuilt binary for this platform compiles against .node's headers:
	# node-gyp reads npm_package_config_node_gyp_nodedir, which npm does not warn about as it does
	# about npm_config_nodedir (an unknown npm config since npm 11).
	if [ -d .node/include/node ]; then export npm_package_config_node_gyp_nodedir=$(CURDIR)/.node; fi; npm install --no-audit --no-fund --no-save
	@touch $@

install: node_modules/.installed

# glibc gives large freed buffers back to the OS only with a fixed mmap threshold (docs/security.md)
SERVER_ENV := MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072

run: install
	$(SERVER_ENV) $(NODE) server/main.ts

# The server as production runs it (package.json's start, the image): JavaScript in dist/app/ for
# plain node, with the isolate's prelude and the console built there (scripts/build.ts). `make run`
# and the tests run the TypeScript through tsx instead.
build: install
	$(NODE) scripts/build.ts

check: install
	npx tsc --noEmit
	npx biome check .

test: check
	scripts/ensure-chromium.sh
	scripts/ensure-pytest.sh
	scripts/ensure-postgres.sh
	scripts/ensure-haproxy.sh
	$(NODE) --test --test-concurrency=1 $(TESTS)

# The quick loop while working: type check, lint and every suite but the slow ones, without the
# apt installs (FILES= still picks files).
test-fast: check
	$(NODE) --test --test-concurrency=1 $(if $(FILES),$(FILES),$(filter-out $(SLOW_TESTS),$(ALL_TESTS)))

# The suite again on PostgreSQL: every server a test starts gets a database of its own in a
# throwaway cluster (scripts/test-postgres.ts). FILES="test/a.test.ts …" runs only those.
test-postgres: install
	scripts/ensure-postgres.sh
	$(NODE) scripts/test-postgres.ts $(FILES)

# Optional, not part of `make test`: a real GRPOTrainer step (TRL) on a tiny model built here, its
# rewards from the Python client's blocking and async adapters, and Adaptive's stock reward server
# and client against a real server, their packages installed into a cached venv from the machine's
# local package index only. Skips (and says so) a part that cannot be installed
# (test/support/trainers.sh; GRADEBOX_TRAINERS=adaptive runs one part).
test-trainers: install
	test/support/trainers.sh

# sdk/wire.ts, the SDK's wire types: generated from the server's OpenAPI document, so run it after
# changing the server's zod schemas (test/wire-types.test.ts fails until then).
.PHONY: wire-types
wire-types: install
	$(NODE) scripts/gen-wire-types.ts

# The installable packages: dist/gradebox-<version>.tgz (SDK + client CLI, `npm install` it anywhere).
# The Python client installs from its directory: `pip install clients/python`.
package: install
	$(NODE) scripts/build-package.ts
	mkdir -p dist && cd packages/gradebox && npm pack --pack-destination ../../dist

bench: install
	scripts/ensure-postgres.sh
	scripts/ensure-haproxy.sh
	$(NODE) bench/run.ts

soak: install
	$(SERVER_ENV) $(NODE) bench/soak.ts

clean:
	rm -rf node_modules data .node dist packages/gradebox/dist
