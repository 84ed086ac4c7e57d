# The two front-door commands: `make run` and `make test`. Both install what is needed first.
NODE := node --no-node-snapshot --import tsx
TESTS := $(sort $(wildcard test/*.test.ts))

.PHONY: install run test check bench clean

node_modules/.installed: package.json package-lock.json
	# npm install, not npm ci: the registry here lacks some of biome's optional per-platform binaries,
	# which npm ci insists on finding in the lock file. The lock file still pins every version.
	npm install --no-audit --no-fund
	@touch $@

install: node_modules/.installed

run: install
	$(NODE) server/main.ts

check: install
	npx tsc --noEmit
	npx biome check .

test: check
	scripts/ensure-chromium.sh
	$(NODE) --test --test-concurrency=1 $(TESTS)

bench: install
	$(NODE) bench/run.ts

clean:
	rm -rf node_modules data
