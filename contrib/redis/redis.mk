# contrib/redis: make fragment, included by the root Makefile
# (include contrib/redis/redis.mk). Uses GO and BIN from it.
#
# The tests start their own redis-server (Debian's package) on a free
# loopback port: `make test` needs only the redis-server target to have run.
# With CI set, a missing redis-server fails the tests instead of skipping them.

REDIS_BENCH_ROUNDS ?= 20
REDIS_EL_ROUNDS    ?= 5
REDIS_BENCH_TXT    := $(BIN)/redis-bench.txt

.PHONY: test-redis test-valkey soak-redis valkey-server bench-redis

## test-redis: the contrib/redis tests alone (real redis-server, about 15 s)
test-redis: redis-server
	cd contrib/redis && $(GO) test -race -count=1 ./...

## test-valkey: the contrib/redis tests against valkey-server (Valkey 8.0.1,
## Debian bookworm-backports, which this target enables if needed, from the
## same mirror as the system's Debian sources)
test-valkey: valkey-server
	cd contrib/redis && RXBULKHEAD_REDIS_SERVER=valkey-server RXBULKHEAD_REDIS_CLI=valkey-cli $(GO) test -race -count=1 ./...

## soak-redis: the process, Cluster (slot migration, master kill), Sentinel failover and ChangeConfig
## tests under load REDIS_SOAK times longer (default 20: about 6 min)
REDIS_SOAK ?= 20
soak-redis: redis-server
	cd contrib/redis && RXBULKHEAD_REDIS_SOAK=$(REDIS_SOAK) $(GO) test -race -count=1 -timeout 30m \
		-run '^(TestSeveralProcessesNeverHoldMoreThanTheFleetLimit|TestClusterKeepsTheFleetLimitThroughASlotMigrationUnderLoad|TestClusterMasterKillUnderLoadKeepsTheLimitAndRecoversOnThePromotedReplica|TestSentinelFailoverUnderLoadKeepsTheLimitAndTokensIncreasing|TestChangeConfigReachesEveryReplicaUnderLoad)$$' -v ./... \
		| grep -E '^(---|ok|FAIL|PASS)|processes|failover:'

## valkey-server: install valkey-server and valkey-cli from bookworm-backports
valkey-server:
	@command -v valkey-server >/dev/null 2>&1 || { \
		echo "== installing valkey-server (apt-get, bookworm-backports)"; \
		apt-get update -qq; \
		apt-cache policy valkey-server 2>/dev/null | grep -q 'Candidate: [0-9]' || { \
			uri=$$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -1); \
			printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$$uri" \
				> /etc/apt/sources.list.d/bookworm-backports.sources && apt-get update -qq; }; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null; \
	}
	@command -v valkey-server >/dev/null 2>&1 || { echo "valkey-server is missing and could not be installed"; exit 1; }

## bench-redis: contrib/redis benchmarks, fleet and peer interleaved round by
## round, on one server and on a 3-master cluster (REDIS_BENCH_ROUNDS and
## REDIS_EL_ROUNDS rounds, about 6 min); prints the median per-round ratios
bench-redis: redis-server
	@mkdir -p $(BIN)
	cd contrib/redis && $(GO) test -c -o $(BIN)/redis.test .
	@rm -f $(REDIS_BENCH_TXT); for i in $$(seq $(REDIS_BENCH_ROUNDS)); do \
		for b in 'AcquireRelease/^fleet$$' 'AcquireRelease/^incr-decr$$'; do \
			$(BIN)/redis.test -test.run '^$$' -test.bench "^Benchmark$$b" -test.benchmem -test.benchtime 3000x -test.count 1 \
				| grep '^Benchmark' >> $(REDIS_BENCH_TXT); \
		done; \
		$(BIN)/redis.test -test.run '^$$' -test.bench '^BenchmarkClusterAcquireRelease$$' -test.benchmem -test.benchtime 3000x -test.count 1 \
			| grep '^Benchmark' >> $(REDIS_BENCH_TXT); \
	done
	@for i in $$(seq $(REDIS_EL_ROUNDS)); do \
		for b in 'EventLoop/^semaphore$$' 'EventLoop/^fleet-3-processes$$'; do \
			$(BIN)/redis.test -test.run '^$$' -test.bench "^Benchmark$$b" -test.benchtime 1x -test.count 1 \
				| grep '^Benchmark' >> $(REDIS_BENCH_TXT); \
		done; \
	done
	$(BIN)/redis.test -test.run '^$$' -test.bench '^Benchmark(QueuedWaiters|Renewal|RegistryKeyFlood)$$' -test.benchtime 1x -test.count 1 | grep '^Benchmark' | tee -a $(REDIS_BENCH_TXT)
	@awk -f contrib/redis/benchratio.awk $(REDIS_BENCH_TXT)
