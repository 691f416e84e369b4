# doorman-go: pg_doorman, patroni_proxy and pgrole_check.
GO       ?= go
BIN      := bin
PKGS     := ./...
RACE_PKGS := ./internal/pool/... ./internal/authquery/... ./internal/pooler/... ./internal/prepared/... ./internal/session/... ./internal/daemon/... ./internal/proxy/... ./internal/patroni/...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/doorman-go/doorman/internal/daemon.Version=$(VERSION)

.PHONY: all build build-pam run test test-unit test-race test-bdd test-e2e drill bench soak fuzz lint cross clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# pg_doorman with PAM (auth_pam_service): needs cgo, a C compiler and
# libpam0g-dev (internal/auth/pam).
build-pam:
	@mkdir -p $(BIN)
	$(GO) build -tags pam -ldflags "$(LDFLAGS)" -o $(BIN)/pg_doorman ./cmd/pg_doorman

run:
	@scripts/run.sh

# The test command of README and CI.
test: build lint
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(GO) test -count=1 -race -timeout 15m $(RACE_PKGS)
	$(GO) test -count=1 -tags pam ./internal/auth/pam/... ./internal/config/
	$(GO) test -count=1 -tags pam -run 'PAM' ./internal/session/
	# The session and daemon tests again with the transaction core off (it
	# is on by default on Linux): the goroutine path still serves TLS
	# clients, session mode and whatever the core hands back. And the
	# alerts against a real scrape with the core off.
	PG_DOORMAN_GENERAL_TRANSACTION_LOOP=false $(GO) test -count=1 -timeout 10m ./internal/session/ ./internal/daemon/ ./deploy/deploytest/
	$(MAKE) test-bdd
	$(MAKE) test-e2e

# Gherkin scenarios (godog) against the built binary and real PostgreSQL.
test-bdd: build
	cd bdd && DOORMAN_BIN=$(CURDIR)/$(BIN)/pg_doorman $(GO) test -count=1 -timeout 5m ./...

# End-to-end tests against a real 3-node Patroni + etcd cluster
# (internal/pgtest/patronisbx), one package at a time since they share it;
# the cluster is then stopped and its folder deleted, pass or fail.
E2E_SANDBOX := internal/pgtest/patronisbx/sandbox
E2E_BASE    := /tmp/doorman-e2e-sbx
test-e2e:
	@rc=0; PATRONI_E2E=1 $(GO) test -count=1 -p 1 -run E2E -timeout 15m ./internal/proxy ./internal/daemon || rc=$$?; \
	WIPE=1 $(E2E_SANDBOX)/down.sh $(E2E_BASE) || rc=1; exit $$rc

# Failover drill (issue 16) on the Patroni sandbox: patroni_proxy and a
# pg_doorman per node, the drill across a switchover and each unplanned case,
# direct multi-host and ours interleaved (DRILL_RUNS, DRILL_UNPLANNED_RUNS,
# DRILL_SCENARIOS, DRILL_OUT: internal/drill/sandbox_e2e_test.go). Not part of
# make test: it takes tens of minutes. Patroni's synchronous_mode is on by
# default (DRILL_SYNC=0 for async: a node loss then loses acknowledged
# writes in every stack, direct included; docs/failover.md). The sandbox is
# stopped and deleted afterwards, pass or fail. The stack runs as we
# recommend it on Patroni nodes: the write port's hold_timeout 3s, and
# pg_doorman's server_login_retry 100ms gated by the node's own Patroni
# (server_login_retry_patroni); DRILL_HOLD=0 DRILL_LOGIN_RETRY= for the
# defaults of both daemons.
DRILL_SYNC ?= 1
DRILL_HOLD ?= 3s
DRILL_LOGIN_RETRY ?= 100ms
DRILL_LOGIN_RETRY_PATRONI ?= 1
drill:
	@rc=0; PATRONI_E2E=1 DRILL_SYNC=$(DRILL_SYNC) DRILL_HOLD=$(DRILL_HOLD) DRILL_LOGIN_RETRY=$(DRILL_LOGIN_RETRY) \
	DRILL_LOGIN_RETRY_PATRONI=$(DRILL_LOGIN_RETRY_PATRONI) $(GO) test -count=1 -p 1 -v -run TestDrillSandbox -timeout 90m ./internal/drill || rc=$$?; \
	WIPE=1 $(E2E_SANDBOX)/down.sh $(E2E_BASE) || rc=1; exit $$rc

lint:
	@out=$$(gofmt -l cmd internal bdd); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags pam ./internal/auth/pam/... ./internal/config/ ./internal/session/
	cd bdd && $(GO) vet ./...

# The daemons and libraries build on macOS and FreeBSD too (the test
# suites, the bench and the transaction core are Linux's; on macOS the test
# files still compile, which vet checks). Not part of test: a cold cross
# build of the standard library takes minutes.
cross:
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=freebsd $(GO) build ./...
	GOOS=freebsd $(GO) vet ./...

bench: build
	@scripts/bench.sh

# 30 minutes of 400 clients with kills through pg_doorman (SOAK_* knobs in
# scripts/soak.sh); not part of make test.
soak: build
	@scripts/soak.sh

# Short run of every fuzz target (FUZZTIME per target).
FUZZTIME ?= 10s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN) .run
