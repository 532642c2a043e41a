# The hub simulation (bench/hubsim): the full scenario of issue 27 over
# FullSeeds seeds, every mode, then docs/benchmarks.md's "The hub budget"
# section. Included from the Makefile (include bench/hubsim/hubsim.mk).
# TestQuick, a short version, runs in make test.
GO ?= go

.PHONY: hub-sim hub-sim-docs

## hub-sim: the full sweep of both scenarios (about 5 min on 2 idle cores), then the docs
hub-sim:
	cd bench && $(GO) test ./hubsim -run '^TestSweep$$' -count=1 -timeout 60m -v -full
	$(MAKE) -f bench/hubsim/hubsim.mk hub-sim-docs

## hub-sim-docs: docs/benchmarks.md's section from the last saved sweep
hub-sim-docs:
	cd bench && $(GO) test ./hubsim -run '^TestSweepDocs$$' -count=1 -v -update
