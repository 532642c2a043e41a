package bulkhead_test

import (
	"errors"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

func TestPendingAcquisitionGrantDeliversOnce(t *testing.T) {
	withdrawn := 0
	a, r := bulkhead.PendingAcquisition(func() { withdrawn++ })
	if err := a.Err(); !errors.Is(err, bulkhead.ErrPending) {
		t.Fatalf("Err before a decision = %v, want ErrPending", err)
	}
	var got []error
	a.OnDone(func(err error) { got = append(got, err) })
	if !r.Grant() {
		t.Fatal("first Grant lost")
	}
	if r.Grant() || r.Reject(errors.New("late")) || a.Cancel() {
		t.Fatal("a second decision won")
	}
	if len(got) != 1 || got[0] != nil || !a.Granted() || withdrawn != 0 {
		t.Fatalf("callbacks %v, granted %v, withdrawn %d", got, a.Granted(), withdrawn)
	}
}

func TestPendingAcquisitionCancelWithdrawsBeforeCallbacks(t *testing.T) {
	var order []string
	a, r := bulkhead.PendingAcquisition(func() { order = append(order, "withdraw") })
	a.OnDone(func(err error) { order = append(order, "callback "+err.Error()) })
	if !a.Cancel() {
		t.Fatal("Cancel of a pending acquisition lost")
	}
	if r.Grant() {
		t.Fatal("Grant after Cancel won: the caller would think the permit was handed over")
	}
	want := []string{"withdraw", "callback " + bulkhead.ErrCancelled.Error()}
	if len(order) != 2 || order[0] != want[0] || order[1] != want[1] {
		t.Fatalf("order = %q, want %q", order, want)
	}
}

func TestPendingAcquisitionRejectKeepsTheError(t *testing.T) {
	boom := errors.New("store unreachable")
	a, r := bulkhead.PendingAcquisition(nil)
	if !r.Reject(boom) {
		t.Fatal("Reject lost")
	}
	if !errors.Is(a.Err(), boom) || a.Cancel() {
		t.Fatalf("Err = %v; Cancel after a rejection must fail", a.Err())
	}
}

func TestPendingAcquisitionRejectNilPanics(t *testing.T) {
	_, r := bulkhead.PendingAcquisition(nil)
	defer func() {
		if recover() == nil {
			t.Fatal("Reject(nil) did not panic")
		}
	}()
	r.Reject(nil)
}
