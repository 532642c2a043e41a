package slogevents_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (the default logger replaced
// between two events, a level changed at run time, a logger carrying
// attributes and a group, a bulkhead in shadow mode).

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/slogevents"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Logger.Logger: "Nil means slog.Default() at the time of each event": a
// default replaced between two events gets the second, and the zero Logger
// keeps no reference to the first.
func TestHostileZeroLoggerFollowsTheDefaultLoggerEventByEvent(t *testing.T) {
	first, second := &recordingHandler{min: slog.LevelDebug}, &recordingHandler{min: slog.LevelDebug}
	prev := slog.Default()
	defer slog.SetDefault(prev)
	var l slogevents.Logger
	slog.SetDefault(slog.New(first))
	l.Log(bulkhead.Event{Type: bulkhead.CallRejected, Name: "a", Reason: bulkhead.NoWait})
	slog.SetDefault(slog.New(second))
	l.Log(bulkhead.Event{Type: bulkhead.CallCancelled, Name: "b"})
	if f, s := first.all(), second.all(); len(f) != 1 || len(s) != 1 || attrsOf(f[0])["bulkhead"] != "a" || attrsOf(s[0])["bulkhead"] != "b" {
		t.Fatalf("first default got %v, second %v; want one record each, in event order", f, s)
	}
}

// RejectedLevel and CancelledLevel are slog.Levelers: a *slog.LevelVar
// changed at run time must decide each event's level and whether it is
// logged at all ("if ... the logger is enabled for its level").
func TestHostileLevelVarsAreReadAtEachEvent(t *testing.T) {
	h := &recordingHandler{min: slog.LevelInfo}
	var rejected, cancelled slog.LevelVar
	l := slogevents.Logger{Logger: slog.New(h), RejectedLevel: &rejected, CancelledLevel: &cancelled}
	reject := bulkhead.Event{Type: bulkhead.CallRejected, Name: "a", Reason: bulkhead.QueueFull}
	cancel := bulkhead.Event{Type: bulkhead.CallCancelled, Name: "a"}

	rejected.Set(slog.LevelDebug) // below the handler's minimum: dropped
	cancelled.Set(slog.LevelDebug)
	l.Log(reject)
	l.Log(cancel)
	rejected.Set(slog.LevelError)
	cancelled.Set(slog.LevelWarn)
	l.Log(reject)
	l.Log(cancel)
	recs := h.all()
	if len(recs) != 2 || recs[0].Level != slog.LevelError || recs[1].Level != slog.LevelWarn {
		t.Fatalf("records %v, want only the two events logged after the levels went up, at error and warn", recs)
	}
}

// Logger: "A rejection is logged as "bulkhead call rejected" with the
// attributes bulkhead ... and reason". The records go through the given
// logger's handler, so a logger built With attributes and WithGroup keeps
// them: the service attribute stays at the top and the event's attributes
// sit in the group, as for any record of that logger.
func TestHostileALoggerWithAttributesAndAGroupKeepsThem(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil)).With("service", "orders").WithGroup("bh")
	at := time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)
	slogevents.Logger{Logger: logger}.Log(bulkhead.Event{Type: bulkhead.CallRejected, Name: "walmart", Reason: bulkhead.WaitTimeout, Time: at})
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	group, _ := got["bh"].(map[string]any)
	if got["msg"] != "bulkhead call rejected" || got["level"] != "WARN" || got["service"] != "orders" ||
		got["time"] != at.Format(time.RFC3339) || group["bulkhead"] != "walmart" || group["reason"] != "wait timeout" {
		t.Fatalf("record %s, want the rejection at its event time, service=orders, and bh.bulkhead, bh.reason", buf.String())
	}
}

// Log: "it ignores every other event", CallShadowed included: a bulkhead in
// shadow mode lets every call through, so at its limit it logs nothing,
// though its events say what the limit would have rejected.
func TestHostileShadowModeAtItsLimitLogsNothing(t *testing.T) {
	bh := newSemaphore(t, "shadow", bulkhead.Config{MaxConcurrentCalls: 1, ShadowMode: true}, bulkhead.WithClock(testkit.NewVirtualClock(epoch)))
	h := &recordingHandler{min: slog.LevelDebug}
	defer bh.OnEvent(slogevents.Logger{Logger: slog.New(h)}.Log)()
	events := testkit.RecordEvents(t, bh)
	for range 2 {
		if !bh.TryAcquirePermission() {
			t.Fatal("shadow mode refused a call")
		}
	}
	bh.FinishCall()
	bh.FinishCall()
	if events.Count(bulkhead.CallShadowed) != 1 {
		t.Fatalf("events %v, want one shadowed call", events.Strings())
	}
	if recs := h.all(); len(recs) != 0 {
		t.Fatalf("records %v, want none: a shadowed call is no rejection", recs)
	}
}
