# The adaptive-limits scenario matrix (bench/adaptivesim): every limiter on
# every cell, FullSeeds seeds each, then docs/benchmarks.md's "Adaptive
# limits" section and docs/img/adaptive-*.png from the saved results.
# Include it from the Makefile (include bench/adaptivesim/adaptivesim.mk) or
# run it as: make -f bench/adaptivesim/adaptivesim.mk adaptive-matrix
GO ?= go

RERUN ?= ^capacity

.PHONY: adaptive-matrix adaptive-rerun adaptive-docs

## adaptive-matrix: the full matrix (about 10 min on 2 cores), then the docs
adaptive-matrix:
	cd bench && $(GO) test ./adaptivesim -run '^TestMatrix$$' -count=1 -timeout 60m -v -full
	$(MAKE) -f bench/adaptivesim/adaptivesim.mk adaptive-docs

## adaptive-rerun: after a change only the contenders matching RERUN (default
## ^capacity: the default algorithm's three wirings) see, run them again on
## the saved matrix (about 1 min of the 22), then the docs
adaptive-rerun:
	cd bench && $(GO) test ./adaptivesim -run '^TestMatrixRerun$$' -count=1 -timeout 60m -v -rerun '$(RERUN)'
	$(MAKE) -f bench/adaptivesim/adaptivesim.mk adaptive-docs

## adaptive-docs: docs/benchmarks.md and the plots from the last saved matrix
adaptive-docs:
	cd bench && $(GO) test ./adaptivesim -run '^TestMatrixDocs$$' -count=1 -v -update
