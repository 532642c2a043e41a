# contrib/redis: make fragment, included by the root Makefile
# (include contrib/redis/redis.mk). Uses GO and BIN from it.
#
# The tests start their own redis-server (Debian's package) on a free
# loopback port: `make test` needs only the redis-server target to have run.
# With CI set, a missing redis-server fails the tests instead of skipping them.

REDIS_BENCH_ROUNDS ?= 20
REDIS_EL_ROUNDS    ?= 5
REDIS_BENCH_TXT    := $(BIN)/redis-bench.txt

.PHONY: test-redis bench-redis

## test-redis: the contrib/redis tests alone (real redis-server, about 15 s)
test-redis: redis-server
	cd contrib/redis && $(GO) test -race -count=1 ./...

## bench-redis: contrib/redis benchmarks, fleet and peer interleaved round by
## round (REDIS_BENCH_ROUNDS and REDIS_EL_ROUNDS rounds, about 2 min); prints
## the median per-round ratios
bench-redis: redis-server
	@mkdir -p $(BIN)
	cd contrib/redis && $(GO) test -c -o $(BIN)/redis.test .
	@rm -f $(REDIS_BENCH_TXT); for i in $$(seq $(REDIS_BENCH_ROUNDS)); do \
		for b in 'AcquireRelease/^fleet$$' 'AcquireRelease/^incr-decr$$'; do \
			$(BIN)/redis.test -test.run '^$$' -test.bench "^Benchmark$$b" -test.benchmem -test.benchtime 3000x -test.count 1 \
				| grep '^Benchmark' >> $(REDIS_BENCH_TXT); \
		done; \
	done
	@for i in $$(seq $(REDIS_EL_ROUNDS)); do \
		for b in 'EventLoop/^semaphore$$' 'EventLoop/^fleet-3-processes$$'; do \
			$(BIN)/redis.test -test.run '^$$' -test.bench "^Benchmark$$b" -test.benchtime 1x -test.count 1 \
				| grep '^Benchmark' >> $(REDIS_BENCH_TXT); \
		done; \
	done
	$(BIN)/redis.test -test.run '^$$' -test.bench '^Benchmark(QueuedWaiters|Renewal)$$' -test.benchtime 1x -test.count 1 | grep '^Benchmark' | tee -a $(REDIS_BENCH_TXT)
	@awk -f contrib/redis/benchratio.awk $(REDIS_BENCH_TXT)
