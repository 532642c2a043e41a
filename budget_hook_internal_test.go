package bulkhead

import (
	"runtime"
	"testing"
	"time"
)

// The partner's acquisition is decided between the check that it is
// pending and the registration of the call's partnerDone (the hook grants
// it there): partnerDone then runs inline, before AcquirePermissionAsync
// returns the call, and a budget listener ends that goroutine
// (runtime.Goexit) while the grant is delivered. The call nobody will hold
// must not keep its permits: it found the stress test's leak.
func TestCallGrantedInlineBeforeItIsReturnedIsWithdrawnWhenItsDeliveryEnds(t *testing.T) {
	b, err := NewBudget("hub", BudgetConfig{Size: 4, MaxQueuedCalls: Unbounded,
		Classes: []ClassConfig{{Name: "only", MaxWaitDuration: time.Minute, MaxQueuedCalls: Unbounded}}})
	if err != nil {
		t.Fatal(err)
	}
	var resolver *Resolver
	partner := &hookPartner{}
	partner.acquire = func() *Acquisition {
		a, r := PendingAcquisition(nil)
		resolver = r
		return a
	}
	p, err := b.Partner(partner, PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	afterPartnerPending = func(*Acquisition) { resolver.Grant() }
	defer func() { afterPartnerPending = nil }()
	remove := b.OnEvent(func(e BudgetEvent) {
		if e.Type == CallPermitted {
			runtime.Goexit()
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.AcquirePermissionAsync() // ends in Goexit, never returns
		t.Error("AcquirePermissionAsync returned")
	}()
	<-done
	remove()
	if m := b.Metrics(); m.InUse != 0 {
		t.Errorf("the budget holds %d permits for a call nobody holds", m.InUse)
	}
	if partner.out != 0 {
		t.Errorf("the partner holds %d permits for a call nobody holds", partner.out)
	}
}

// hookPartner is a Bulkhead whose acquisitions the test makes, counting
// the permits given back.
type hookPartner struct {
	acquire func() *Acquisition
	out     int
}

func (h *hookPartner) Name() string { return "partner" }
func (h *hookPartner) AcquirePermissionAsync() *Acquisition {
	h.out++
	return h.acquire()
}
func (h *hookPartner) ReleasePermission() { h.out-- }
func (h *hookPartner) FinishCall()        { h.out-- }
