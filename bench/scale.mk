# bench/scale.mk: the scale benchmark (bench/scale_test.go), included by the
# root Makefile. Not part of `make test` (TestScaleSmall is): at N = 1e6 a
# round takes a few minutes and x/sync's waiters take about 3 GB.
#
#   make bench-scale [SCALE_SIZES=1000,10000,100000,1000000] [SCALE_ROUNDS=3] [SCALE_OLD=path/to/old.test]
#
# Builds the bench test binary twice, plain and with the lock-hold
# measurement compiled in (-tags bulkheadlockhold), and runs every leaf for each size in a process
# of its own, round after round (bench/scripts/scale.sh), into
# bench/scale.txt. SCALE_OLD is a binary of the same benchmark built
# against an older core, whose rxbulkhead leaves are interleaved with the
# new ones (rxbulkhead-old). The table and plot in docs/benchmarks.md ("The
# queue at scale") are drawn from that file by bench/cmd/scaleplot.
SCALE_SIZES  ?= 1000,10000,100000,1000000
SCALE_ROUNDS ?= 3
SCALE_OLD    ?=

.PHONY: bench-scale
bench-scale:
	mkdir -p $(BIN) && cd bench && $(GO) test -c -o $(BIN)/bench-scale.test . && \
		$(GO) test -c -tags bulkheadlockhold -o $(BIN)/bench-scale-lockhold.test .
	cd bench && ./scripts/scale.sh $(BIN)/bench-scale.test $(SCALE_ROUNDS) $(SCALE_SIZES) "$(SCALE_OLD)" $(BIN)/bench-scale-lockhold.test > scale.txt
	cd bench && $(GO) run ./cmd/scaleplot -in scale.txt -img ../docs/img/scale.png
