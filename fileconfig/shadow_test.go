package fileconfig_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead/fileconfig"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// shadowMode is inherited like any setting, and Apply switches it on a
// live bulkhead (its waiters are then granted: see bulkhead.Config).
func TestShadowModeKeyIsInheritedAndAppliedLive(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 1, "shadowMode": true}},
		"instances": {"trial": {}, "enforced": {"shadowMode": false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	trial, _ := r.Find("trial")
	enforced, _ := r.Find("enforced")
	if !trial.Config().ShadowMode || enforced.Config().ShadowMode {
		t.Fatalf("shadow mode: trial %v, enforced %v; want true (inherited), false (overridden)", trial.Config().ShadowMode, enforced.Config().ShadowMode)
	}
	for i := range 2 { // a limit of 1, two calls: the second is over it
		if !trial.TryAcquirePermission() {
			t.Fatalf("a bulkhead in shadow mode refused call %d", i+1)
		}
	}
	if err := fileconfig.Apply(r, decodeJSON(t, `{"instances": {"trial": {"maxConcurrentCalls": 1}, "enforced": {"maxConcurrentCalls": 1, "shadowMode": true}}}`)); err != nil {
		t.Fatal(err)
	}
	if trial.Config().ShadowMode || !enforced.Config().ShadowMode {
		t.Fatalf("after Apply: trial %v, enforced %v; want false, true", trial.Config().ShadowMode, enforced.Config().ShadowMode)
	}
	if trial.TryAcquirePermission() {
		t.Fatal("enforced again, trial let a third call through with two in flight")
	}
	trial.FinishCall()
	trial.FinishCall()
}
