# rxbulkhead build. Every tool the targets use is installed by the targets
# themselves (pinned versions) into ./.bin, so a fresh clone needs only Go.

GO              ?= go
BIN             := $(CURDIR)/.bin
STATICCHECK_VER := v0.8.2
STATICCHECK     := $(BIN)/staticcheck
BENCHSTAT_VER   := v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT       := $(BIN)/benchstat
# The core module and every nested module (bench, contrib/*, ...).
MODULES         := $(shell find . -name go.mod -not -path './.bin/*' -exec dirname {} \; | sort)
STRESS_TIME     ?= 2m
FUZZ_TIME       ?= 30s
# Minimizing an input (a failing one, or one with new coverage) stops after
# FUZZ_MINIMIZE_TIME executions (go test's default, 60 s, is longer than
# FUZZ_TIME), so a failure is reported promptly. A count, not a duration: with
# a duration the coordinator's deadline (which starts before the worker's)
# killed the worker in mid-minimization and lost the executions it ran
# (FuzzAlgorithms, 30 s: 8 and 12 killed minimizations with 5s, none with 200x).
FUZZ_MINIMIZE_TIME ?= 200x

.PHONY: all test vet redis-server prometheus lint fmt-check bench bench-core cover demo stress fuzz tools release-tags clean

all: lint test

## test: the race-enabled tests of every module, vet included (go test
## -vet=all), TEST_JOBS modules at a time, longest first (.ci/test-modules;
## each module's log is in .bin/test-logs and printed when all are done).
## Keep it under 2 minutes on 2 cores: long sweeps belong in stress, bench
## and the *-sim/-matrix targets, not here.
TEST_LOGS  := $(BIN)/test-logs
TEST_JOBS  ?= 3
# The modules that take longest, in that order; the others follow.
# internal/installcheck first: with a cold build cache its consumers compile
# every third-party package (230 s at load 12 on 2 cores; 15 s warm).
TEST_FIRST := internal/installcheck . bench contrib/redis internal/fleetmetrics examples/edihub internal/linearizability contrib/prometheus
TEST_MODULES = $(TEST_FIRST) $(filter-out $(TEST_FIRST),$(MODULES:./%=%))
# Packages tested without -race: no concurrency of their own (the adaptive
# simulation runs on a virtual clock; installcheck runs the go command), and
# several times slower under it. bench/hubsim proves the hub budget's
# figures on virtual time inside synctest bubbles, 17 times slower under
# -race (18.4 s against 1.1 s); the Budget and Semaphore code it drives is
# hammered under -race by the core module's stress tests (TestStressBudget,
# TestStressWeightedSemaphore).
NORACE     := internal/installcheck bench/adaptivesim bench/hubsim
test: redis-server prometheus
	@GO="$(GO)" TEST_JOBS="$(TEST_JOBS)" NORACE="$(NORACE)" ./.ci/test-modules $(TEST_LOGS) $(TEST_MODULES)

## vet: go vet over every module on its own (make test vets inside go test)
vet:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

## redis-server: the contrib/redis tests start their own redis-server,
## redis-sentinel and redis-cli (Debian's packages); install them when missing
redis-server:
	@{ command -v redis-server && command -v redis-sentinel && command -v redis-cli; } >/dev/null 2>&1 || { \
		echo "== installing redis-server, redis-sentinel (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel redis-tools >/dev/null; \
	}
	@command -v redis-server >/dev/null 2>&1 || { echo "redis-server is missing and could not be installed"; exit 1; }

## prometheus: the contrib/prometheus tests start their own Prometheus and run
## promtool (Debian's prometheus package ships both); install it when missing
prometheus:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
		echo "== installing prometheus (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; \
	}
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { echo "prometheus is missing and could not be installed"; exit 1; }

## lint: gofmt and a pinned staticcheck over every module
lint: fmt-check $(STATICCHECK)
	@set -e; for m in $(MODULES); do \
		echo "== staticcheck $$m"; \
		(cd $$m && $(STATICCHECK) ./...); \
	done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)

tools: $(STATICCHECK) $(BENCHSTAT)

$(BENCHSTAT):
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VER)

## bench: peer benchmarks (GOMAXPROCS 1 and 2) and the #1592 event-loop
## experiment; regenerates docs/benchmarks.md and its plots (about 5 min).
## The test binary is built once and every leaf benchmark runs once per
## round, round after round (bench/scripts/interleave.sh), so that a noisy
## machine's drift lands on every peer alike.
BENCH_ROUNDS    ?= 6
bench: $(BENCHSTAT)
	mkdir -p $(BIN) && cd bench && $(GO) test -c -o $(BIN)/bench.test .
	cd bench && ./scripts/interleave.sh $(BIN)/bench.test $(BENCH_ROUNDS) '^Benchmark(TryAcquire|Async|Contended)$$' 1,2 -test.benchmem -test.benchtime 200ms > bench.txt 2>&1 || { cat bench.txt; exit 1; }
	cd bench && ./scripts/interleave.sh $(BIN)/bench.test 3 '^BenchmarkCost' 1,2 -test.benchtime 1x 2>/dev/null >> bench.txt || { cat bench.txt; exit 1; }
	$(BENCHSTAT) bench/bench.txt | tee bench/benchstat.txt
	cd bench && $(GO) run ./cmd/benchdoc -bench bench.txt -benchstat benchstat.txt -out ../docs/benchmarks.md -img ../docs/img

## bench-core: the core module's own micro-benchmarks
bench-core:
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1,2 -count 5 .

## cover: coverage of the core module
cover:
	$(GO) test -race -count=1 -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -1

## demo: the EDI hub demo (about 15 s)
demo:
	cd examples/edihub && $(GO) run .

LIN_HISTORIES   ?= 5000
POOL_STRESS_TASKS ?= 4800

## stress: long stress runs of the semaphore, with weight 1 and with
## random weights (STRESS_TIME each, FIFO and LIFO),
## the pool's stress test with POOL_STRESS_TASKS tasks per submitter (400 in
## make test) and many linearizability histories
stress:
	$(GO) test -race -count=1 -timeout 0 -run '^TestStressSemaphore$$' -v . -stress.duration=$(STRESS_TIME)
	$(GO) test -race -count=1 -timeout 0 -run '^TestPoolStress$$' -v ./pool -pool.stresstasks=$(POOL_STRESS_TASKS)
	$(GO) test -race -count=1 -timeout 0 -run '^TestStressWeightedSemaphore$$' -v . -stress.duration=$(STRESS_TIME)
	cd internal/linearizability && LINEARIZABILITY_HISTORIES=$(LIN_HISTORIES) $(GO) test -race -count=1 -timeout 0 -run '^TestConcurrentHistoriesAreLinearizable$$' -v ./...

## fuzz: each fuzz target for FUZZ_TIME
fuzz:
	@set -e; for f in .:FuzzSemaphore ./fileconfig:FuzzConfig ./fileconfig:FuzzRegistryConfigJSON ./adaptive:FuzzAlgorithms; do \
		pkg=$${f%%:*}; f=$${f#*:}; echo "== $$f"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZ_TIME) -fuzzminimizetime $(FUZZ_MINIMIZE_TIME) $$pkg ; \
	done

## release-tags: tag the current commit VERSION for the core and DIR/VERSION
## for every published nested module (docs/releasing.md)
release-tags:
	@case "$(VERSION)" in v[0-9]*) ;; *) echo "usage: make release-tags VERSION=vX.Y.Z"; exit 1;; esac
	@grep -q 'ReleaseVersion = "$(VERSION)"' internal/installcheck/modules.go || { \
		echo "internal/installcheck's ReleaseVersion is not $(VERSION): see docs/releasing.md"; exit 1; }
	git tag $(VERSION)
	@for m in $(MODULES); do \
		case $$m in .) continue;; esac; \
		grep -q '^// Not published' $$m/go.mod && continue; \
		echo "git tag $${m#./}/$(VERSION)"; git tag $${m#./}/$(VERSION); \
	done

clean:
	rm -rf $(BIN) cover.out

# contrib/redis: test-redis and bench-redis
include contrib/redis/redis.mk

# bench: the queue at scale (bench-scale) and the adaptive-limits matrix
# (adaptive-matrix, adaptive-docs)
include bench/scale.mk
include bench/adaptivesim/adaptivesim.mk
# bench/hubsim: the hub budget simulation (hub-sim, hub-sim-docs); the
# budget's long stress and model runs (stress-budget)
include bench/hubsim/hubsim.mk
include budget.mk
