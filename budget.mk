# The budget's long checks, included by the root Makefile: the stress test
# for STRESS_TIME, the naive model for BUDGET_MODEL_SEEDS random sequences
# and LIN_HISTORIES concurrent histories checked for linearizability (make
# test runs 1.5 s, 40 and 300 of them).
BUDGET_MODEL_SEEDS ?= 3000

.PHONY: stress-budget

## stress-budget: the budget's stress test and model test, long
stress-budget:
	$(GO) test -race -count=1 -timeout 0 -run '^TestStressBudget$$' -v . -stress.duration=$(STRESS_TIME)
	$(GO) test -race -count=1 -timeout 0 -run '^TestBudgetAgreesWithANaiveModel$$' -v . -budget.modelseeds=$(BUDGET_MODEL_SEEDS)
	cd internal/linearizability && LINEARIZABILITY_HISTORIES=$(LIN_HISTORIES) $(GO) test -race -count=1 -timeout 0 -run '^TestConcurrentBudgetHistoriesAreLinearizable$$' -v ./...
