# doorman-go: pg_doorman, patroni_proxy and pgrole_check.
GO       ?= go
BIN      := bin
PKGS     := ./...
RACE_PKGS := ./internal/pool/... ./internal/prepared/... ./internal/session/... ./internal/daemon/... ./internal/proxy/... ./internal/patroni/...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/doorman-go/doorman/internal/daemon.Version=$(VERSION)

.PHONY: all build run test test-unit test-race test-bdd bench fuzz lint clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

run:
	@scripts/run.sh

# The test command of README and CI.
test: build lint
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(GO) test -count=1 -race -timeout 15m $(RACE_PKGS)
	$(MAKE) test-bdd

# Gherkin scenarios (godog) against the built binary and real PostgreSQL.
test-bdd: build
	cd bdd && DOORMAN_BIN=$(CURDIR)/$(BIN)/pg_doorman $(GO) test -count=1 -timeout 5m ./...

lint:
	@out=$$(gofmt -l cmd internal bdd); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd bdd && $(GO) vet ./...

bench: build
	@scripts/bench.sh

# Short run of every fuzz target (FUZZTIME per target).
FUZZTIME ?= 10s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN) .run
