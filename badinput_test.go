package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The tests in this file back the table of bad inputs in
// docs/reliability.md: one test per row, named after the row. Each checks
// the error (or the panic, for programmer errors) and that the bad input
// changed nothing.

// panicOf runs f and returns what it panicked with, as text ("" if it did
// not panic).
func panicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}

// requireConfigError checks that err is a *ConfigError for field, naming
// the bulkhead, the field, the value and the rule.
func requireConfigError(t *testing.T, err error, name, field, value, rule string) {
	t.Helper()
	var ce *bulkhead.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("got %v (%T), want a *ConfigError matching ErrInvalidConfig", err, err)
	}
	if ce.Field != field || ce.Name != name {
		t.Errorf("ConfigError names bulkhead %q field %q, want %q and %q", ce.Name, ce.Field, name, field)
	}
	for _, part := range []string{name, field, value, rule} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not contain %q", err, part)
		}
	}
}

func TestBadInputEmptyName(t *testing.T) {
	s, err := bulkhead.New("", bulkhead.DefaultConfig())
	if s != nil || err == nil || err.Error() != "bulkhead: New: name must not be empty" {
		t.Fatalf("New(\"\") = %v, %v", s, err)
	}
}

func TestBadInputNilClock(t *testing.T) {
	s, err := bulkhead.New("walmart", bulkhead.DefaultConfig(), bulkhead.WithClock(nil))
	if s != nil || err == nil || err.Error() != `bulkhead "walmart": WithClock: clock must not be nil` {
		t.Fatalf("New with WithClock(nil) = %v, %v", s, err)
	}
}

func TestBadInputMaxConcurrentCallsBelowOne(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: n})
		requireConfigError(t, err, "walmart", "MaxConcurrentCalls", fmt.Sprint(n), "must be >= 1")
	}
}

func TestBadInputNegativeMaxWaitDuration(t *testing.T) {
	_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: -time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
	requireConfigError(t, err, "walmart", "MaxWaitDuration", "-1ms", "must be >= 0")
}

func TestBadInputNegativeMaxQueuedCalls(t *testing.T) {
	_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: -3})
	requireConfigError(t, err, "walmart", "MaxQueuedCalls", "-3", "must be >= 0")
}

func TestBadInputUnknownQueueOrder(t *testing.T) {
	_, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, QueueOrder: 7})
	requireConfigError(t, err, "walmart", "QueueOrder", "QueueOrder(7)", "must be FIFO or LIFO")
}

func TestBadInputInvalidChangeConfigKeepsTheOldConfig(t *testing.T) {
	old := bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: 4}
	s := newSemaphore(t, "walmart", old)
	if !s.TryAcquirePermission() {
		t.Fatal("no free permit")
	}
	defer s.FinishCall()
	err := s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 0})
	requireConfigError(t, err, "walmart", "MaxConcurrentCalls", "0", "must be >= 1")
	if got := s.Config(); got != old {
		t.Errorf("config after a rejected ChangeConfig: %+v, want %+v", got, old)
	}
	if m := s.Metrics(); m.AvailableConcurrentCalls != 1 || m.InFlightCalls != 1 {
		t.Errorf("metrics after a rejected ChangeConfig: %+v", m)
	}
}

func TestBadInputReleaseWithoutPermitPanicsNamingTheBulkhead(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	for name, release := range map[string]func(){"ReleasePermission": s.ReleasePermission, "OnComplete": s.FinishCall} {
		msg := panicOf(release)
		if msg != `bulkhead "walmart": released more permits than were acquired` {
			t.Errorf("%s with no permit held: panic %q", name, msg)
		}
		if m := s.Metrics(); m.AvailableConcurrentCalls != 2 {
			t.Errorf("%s over-release raised available to %d", name, m.AvailableConcurrentCalls)
		}
	}
}

func TestBadInputNilOnDoneCallbackPanics(t *testing.T) {
	if msg := panicOf(func() { bulkhead.GrantedAcquisition().OnDone(nil) }); msg != "bulkhead: OnDone called with a nil func" {
		t.Errorf("OnDone(nil): panic %q", msg)
	}
}

func TestBadInputNilEventListenerPanics(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.DefaultConfig())
	if msg := panicOf(func() { s.OnEvent(nil) }); msg != "bulkhead: OnEvent called with a nil listener" {
		t.Errorf("OnEvent(nil): panic %q", msg)
	}
}

func TestBadInputRejectedWithNilErrorPanics(t *testing.T) {
	if msg := panicOf(func() { bulkhead.RejectedAcquisition(nil) }); msg != "bulkhead: RejectedAcquisition called with a nil error" {
		t.Errorf("Rejected(nil): panic %q", msg)
	}
}

func TestBadInputFromBlockingNilPanics(t *testing.T) {
	if msg := panicOf(func() { bulkhead.FromBlocking(nil) }); msg != "bulkhead: FromBlocking called with a nil BlockingBulkhead" {
		t.Errorf("FromBlocking(nil): panic %q", msg)
	}
}

func TestBadInputAcquirePermissionWithDoneContext(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	log := testkit.RecordEvents(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.AcquirePermission(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquirePermission(done ctx) = %v, want context.Canceled", err)
	}
	if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Errorf("a done ctx took a permit or queued: %+v", m)
	}
	if got := log.Strings(); len(got) != 0 {
		t.Errorf("a done ctx published events %v", got)
	}
}

func TestBadInputCancelAfterTheOutcome(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	a := s.AcquirePermissionAsync() // granted at once
	if a.Cancel() {
		t.Error("Cancel of a granted acquisition returned true")
	}
	if a.Err() != nil {
		t.Errorf("Cancel changed a granted outcome to %v", a.Err())
	}
	s.FinishCall()
}

func TestBadInputUnknownRegistryConfigName(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 60}))
	if err != nil {
		panic(err)
	}
	_, err = r.GetWithConfig("walmart", "huge")
	if err == nil || err.Error() != `bulkhead "walmart": unknown config "huge" (known: big, default)` {
		t.Fatalf("BulkheadWithConfig(walmart, huge) = %v", err)
	}
	if _, ok := r.Find("walmart"); ok {
		t.Error("the failed call created the bulkhead")
	}
}

func TestBadInputInvalidRegistryAddConfig(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		panic(err)
	}
	err = r.AddConfig("tiny", bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: -1})
	requireConfigError(t, err, "tiny", "MaxQueuedCalls", "-1", "must be >= 0")
	if _, err := r.GetWithConfig("walmart", "tiny"); err == nil {
		t.Error("the rejected config was added")
	}
}

func TestBadInputInvalidRegistryDefaultsFailNewRegistry(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{})
	if r != nil {
		t.Error("NewRegistry returned a registry with invalid defaults")
	}
	requireConfigError(t, err, bulkhead.DefaultConfigName, "MaxConcurrentCalls", "0", "must be >= 1")
}

func TestBadInputInvalidNamedConfigFailsNewRegistry(t *testing.T) {
	_, err := bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: -1, MaxQueuedCalls: bulkhead.Unbounded}))
	requireConfigError(t, err, "big", "MaxWaitDuration", "-1ns", "must be >= 0")
}

func TestBadInputMarshalUnknownQueueOrder(t *testing.T) {
	_, err := bulkhead.QueueOrder(9).MarshalText()
	if err == nil || err.Error() != "bulkhead: cannot marshal QueueOrder(9): want FIFO or LIFO" {
		t.Fatalf("MarshalText(QueueOrder(9)) = %v", err)
	}
}

func TestBadInputVirtualClockGoingBack(t *testing.T) {
	c := testkit.NewVirtualClock(time.Unix(0, 0))
	if msg := panicOf(func() { c.Advance(-time.Second) }); !strings.Contains(msg, "negative duration, time cannot go back") {
		t.Errorf("Advance(-1s): panic %q", msg)
	}
}

// TestBadInputTableMatchesTheTests keeps docs/reliability.md honest: every
// row of its table of bad inputs names a test that exists, and every
// TestBadInput test has its row.
func TestBadInputTableMatchesTheTests(t *testing.T) {
	doc, err := os.ReadFile("docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## Bad inputs")
	if !ok {
		t.Fatal("docs/reliability.md has no section \"## Bad inputs\"")
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("\\| `(TestBadInput\\w+)` \\|").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	defined := map[string]bool{}
	for _, file := range []string{"badinput_test.go", "fileconfig/badinput_test.go", "testkit/tck/badinput_test.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (TestBadInput\w+)\(`).FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
	}
	delete(defined, "TestBadInputTableMatchesTheTests")
	for name := range rows {
		if !defined[name] {
			t.Errorf("docs/reliability.md names %s, which does not exist", name)
		}
	}
	for name := range defined {
		if !rows[name] {
			t.Errorf("%s has no row in the table of docs/reliability.md", name)
		}
	}
	if len(rows) == 0 {
		t.Error("no row found in the table of bad inputs")
	}
}

func TestBadInputAcquirePermissionWithNilContextPanicsNamingIt(t *testing.T) {
	s := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	var noContext context.Context
	defer func() {
		if r := recover(); r != "bulkhead: AcquirePermission called with a nil context" {
			t.Fatalf("recovered %v", r)
		}
		if m := s.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("a permit was taken: %+v", m)
		}
	}()
	_ = s.AcquirePermission(noContext)
}

// A nil Option or RegistryOption in a constructor's list fails the
// constructor with an error naming its position, as WithClock(nil) does
// (it was a nil dereference inside the constructor).
func TestBadInputNilOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (any, error)
		want string
	}{
		{"New", func() (any, error) {
			return bulkhead.New("walmart", bulkhead.DefaultConfig(), bulkhead.WithClock(testkit.NewVirtualClock(time.Unix(0, 0))), nil)
		}, `bulkhead "walmart": opts[1] must not be nil`},
		{"NewBudget", func() (any, error) {
			return bulkhead.NewBudget("hub", budgetConfig(4, 0, class("only", 0, 0)), nil)
		}, `bulkhead "hub": opts[0] must not be nil`},
		{"NewRegistry", func() (any, error) {
			return bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithIdleTimeout(time.Minute), nil)
		}, `bulkhead: NewRegistry: opts[1] must not be nil`},
		{"WithSemaphoreOptions", func() (any, error) {
			return bulkhead.NewRegistry(bulkhead.DefaultConfig(), bulkhead.WithSemaphoreOptions(nil))
		}, `bulkhead: NewRegistry: WithSemaphoreOptions: opts[0] must not be nil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				v   any
				err error
			)
			if msg := panicOf(func() { v, err = tc.make() }); msg != "" {
				t.Fatalf("panicked: %s", msg)
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			switch x := v.(type) {
			case *bulkhead.Semaphore:
				if x != nil {
					t.Errorf("returned %v with the error", x)
				}
			case *bulkhead.Budget:
				if x != nil {
					t.Errorf("returned %v with the error", x)
				}
			case *bulkhead.Registry:
				if x != nil {
					t.Errorf("returned %v with the error", x)
				}
			}
		})
	}
}
