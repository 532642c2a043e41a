package slogevents_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/slogevents"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// recordingHandler keeps the records it is given, at or above min.
type recordingHandler struct {
	min     slog.Level
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) all() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.records...)
}

func attrsOf(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestLoggerLogsRejectionWithNameReasonAndEventTime(t *testing.T) {
	clock := testkit.NewVirtualClock(epoch)
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 1}, bulkhead.WithClock(clock))
	h := &recordingHandler{min: slog.LevelDebug}
	defer bh.OnEvent(slogevents.Logger{Logger: slog.New(h)}.Log)()

	bh.TryAcquirePermission()
	waiter := bh.AcquirePermissionAsync() // queued
	clock.Advance(time.Millisecond)
	bh.AcquirePermissionAsync() // queue full
	clock.Advance(time.Second)  // the waiter times out
	if waiter.Granted() {
		t.Fatal("the waiter was granted")
	}
	bh.FinishCall()

	recs := h.all()
	if len(recs) != 2 {
		t.Fatalf("logged %d records, want 2 (queue full, wait timeout): %v", len(recs), recs)
	}
	for i, want := range []struct {
		reason string
		at     time.Time
	}{{"queue full", epoch.Add(time.Millisecond)}, {"wait timeout", epoch.Add(time.Second)}} {
		r := recs[i]
		if r.Message != "bulkhead call rejected" || r.Level != slog.LevelWarn || !r.Time.Equal(want.at) {
			t.Errorf("record %d = %q at %v level %v, want a warning at %v", i, r.Message, r.Time, r.Level, want.at)
		}
		if got := attrsOf(r); got["bulkhead"] != "walmart" || got["reason"] != want.reason || len(got) != 2 {
			t.Errorf("record %d attributes %v, want bulkhead=walmart reason=%q", i, got, want.reason)
		}
	}
}

func TestLoggerLogsCancellation(t *testing.T) {
	bh := newSemaphore(t, "carrefour", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(testkit.NewVirtualClock(epoch)))
	h := &recordingHandler{min: slog.LevelDebug}
	defer bh.OnEvent(slogevents.Logger{Logger: slog.New(h)}.Log)()

	bh.TryAcquirePermission()
	if !bh.AcquirePermissionAsync().Cancel() {
		t.Fatal("Cancel lost")
	}
	bh.FinishCall()

	recs := h.all()
	if len(recs) != 1 || recs[0].Message != "bulkhead call cancelled" || recs[0].Level != slog.LevelInfo {
		t.Fatalf("records %v, want one info record for the cancellation", recs)
	}
	if got := attrsOf(recs[0]); got["bulkhead"] != "carrefour" || len(got) != 1 {
		t.Errorf("attributes %v, want bulkhead=carrefour only", got)
	}
}

func TestLoggerHonoursLevelsAndSkipsDisabledOnes(t *testing.T) {
	h := &recordingHandler{min: slog.LevelInfo}
	l := slogevents.Logger{Logger: slog.New(h), RejectedLevel: slog.LevelError, CancelledLevel: slog.LevelDebug}
	l.Log(bulkhead.Event{Type: bulkhead.CallRejected, Name: "a", Reason: bulkhead.NoWait})
	l.Log(bulkhead.Event{Type: bulkhead.CallCancelled, Name: "a"}) // debug: disabled
	l.Log(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "a"})
	l.Log(bulkhead.Event{Type: bulkhead.CallFinished, Name: "a"})
	recs := h.all()
	if len(recs) != 1 || recs[0].Level != slog.LevelError || attrsOf(recs[0])["reason"] != "no wait" {
		t.Fatalf("records %v, want only the rejection, at error level", recs)
	}
}

func TestZeroLoggerUsesDefaultLogger(t *testing.T) {
	h := &recordingHandler{min: slog.LevelDebug}
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	defer slog.SetDefault(prev)
	slogevents.Logger{}.Log(bulkhead.Event{Type: bulkhead.CallRejected, Name: "z", Reason: bulkhead.QueueFull})
	if recs := h.all(); len(recs) != 1 || recs[0].Level != slog.LevelWarn {
		t.Fatalf("records %v, want one warning through slog.Default()", recs)
	}
}
