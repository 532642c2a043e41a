package ro_test

import (
	"context"
	"testing"

	"github.com/samber/ro"

	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
	"github.com/rxbulkhead/bulkhead/internal/pipelinetest"
	"github.com/rxbulkhead/bulkhead/operator"
)

// The table every operator of the core module passes runs over the ro
// operator too (pipelinetest is internal to the core module's path, which
// this nested module's path lies under).
func TestTheOperatorGivesPermitsBackByTheSameRulesAsEveryOther(t *testing.T) {
	pipelinetest.Rules(t, roKind)
}

var roKind = pipelinetest.Kind{Name: "ro", HasValues: true, Start: func(op operator.Op, s *pipelinetest.Script) pipelinetest.Run {
	src := ro.NewObservableWithContext(func(_ context.Context, dst ro.Observer[int]) ro.Teardown {
		s.Subscribed()
		if s.Value {
			dst.Next(1)
		}
		if s.Hold {
			return s.Cancelled // runs on Unsubscribe
		}
		if s.Err != nil {
			dst.Error(s.Err)
		} else {
			dst.Complete()
		}
		return nil
	})
	r := &roRun{}
	r.sub = bro.Bulkhead(op.Bulkhead(), src).Subscribe(ro.NewObserver(
		func(int) { r.Value() },
		func(err error) { r.End(err) },
		func() { r.End(nil) },
	))
	return r
}}

type roRun struct {
	pipelinetest.Record
	sub ro.Subscription
}

func (r *roRun) Cancel() { r.sub.Unsubscribe() }
