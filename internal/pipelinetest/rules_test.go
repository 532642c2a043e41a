package pipelinetest_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/pipelinetest"
)

func TestEveryCoreOperatorGivesPermitsBackByTheSameRules(t *testing.T) {
	pipelinetest.Rules(t, pipelinetest.CoreKinds()...)
}
