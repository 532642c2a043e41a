# The budget's long checks (budget*_test.go), included by the root Makefile:
# the stress test for STRESS_TIME and the naive model for BUDGET_MODEL_SEEDS
# random sequences (make test runs 1.5 s and 60 of them).
BUDGET_MODEL_SEEDS ?= 3000

.PHONY: stress-budget

## stress-budget: the budget's stress test and model test, long
stress-budget:
	$(GO) test -race -count=1 -timeout 0 -run '^TestStressBudget$$' -v . -stress.duration=$(STRESS_TIME)
	$(GO) test -race -count=1 -timeout 0 -run '^TestBudgetAgreesWithANaiveModel$$' -v . -budget.modelseeds=$(BUDGET_MODEL_SEEDS)
