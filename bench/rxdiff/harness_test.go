package rxdiff_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/maybe"
	"github.com/rxbulkhead/bulkhead/observable"
	"github.com/rxbulkhead/bulkhead/single"
)

var errFoo = errors.New("foo")

// kind is a kind of source: build makes a fresh Observable emitting items
// (an error value as an error item), built with ctx as its own context.
type kind struct {
	name  string
	build func(ctx context.Context, items []any) rxgo.Observable
}

func itemOf(v any) rxgo.Item {
	if err, ok := v.(error); ok {
		return rxgo.Error(err)
	}
	return rxgo.Of(v)
}

func producer(items []any) rxgo.Producer {
	return func(ctx context.Context, next chan<- rxgo.Item) {
		for _, v := range items {
			if !itemOf(v).SendContext(ctx, next) {
				return
			}
		}
	}
}

var kinds = []kind{
	{"Just", func(ctx context.Context, items []any) rxgo.Observable {
		return rxgo.Just(items...)(rxgo.WithContext(ctx))
	}},
	{"Defer", func(ctx context.Context, items []any) rxgo.Observable {
		return rxgo.Defer([]rxgo.Producer{producer(items)}, rxgo.WithContext(ctx))
	}},
	{"FromChannel", func(ctx context.Context, items []any) rxgo.Observable {
		ch := make(chan rxgo.Item, len(items))
		for _, v := range items {
			ch <- itemOf(v)
		}
		close(ch)
		return rxgo.FromChannel(ch, rxgo.WithContext(ctx))
	}},
	{"Create", func(ctx context.Context, items []any) rxgo.Observable {
		return rxgo.Create([]rxgo.Producer{producer(items)}, rxgo.WithContext(ctx))
	}},
	{"Just.Map", func(ctx context.Context, items []any) rxgo.Observable {
		return rxgo.Just(items...)(rxgo.WithContext(ctx)).Map(identity, rxgo.WithContext(ctx))
	}},
}

// factoryKind is the kind of the cases whose source is an rxgo factory
// itself (Range, Timer, ...): they run once, not once per kind.
var factoryKind = kind{name: "factory"}

func identity(_ context.Context, v any) (any, error) { return v, nil }

// Modes of a run: where the context is.
const (
	ctxOnConsumer = "ctx on the consumer"
	ctxOnSource   = "ctx on the source only"
)

// env is what a case builds its pipeline with, for one run.
type env struct {
	kind    kind
	mode    string
	wrapped bool
	b       *bulkhead.Semaphore
	early   bool // the case's consumer stops reading early (see Case.Early)

	srcCtx  context.Context // every source's own context
	wrapCtx context.Context // the context given to Bulkhead in the runs of early cases

	mu  sync.Mutex
	log []string
}

// Opts are the consumer's options: WithContext(srcCtx) on the consumer,
// none with the context on the source only.
func (e *env) Opts() []rxgo.Option {
	if e.mode == ctxOnConsumer {
		return []rxgo.Option{rxgo.WithContext(e.srcCtx)}
	}
	return nil
}

// Ctx is the consumer's context for an API that needs one (Connect).
func (e *env) Ctx() context.Context { return e.srcCtx }

// Raw is a source of the run's kind over items, unwrapped.
func (e *env) Raw(items ...any) rxgo.Observable { return e.kind.build(e.srcCtx, items) }

// Src is Raw wrapped in observable.Bulkhead in a wrapped run.
func (e *env) Src(items ...any) rxgo.Observable { return e.Wrap(e.Raw(items...)) }

func (e *env) bulkheadOpts() []rxgo.Option {
	if e.early {
		return []rxgo.Option{rxgo.WithContext(e.wrapCtx)}
	}
	return nil
}

// Wrap wraps o in a wrapped run.
func (e *env) Wrap(o rxgo.Observable) rxgo.Observable {
	if !e.wrapped {
		return o
	}
	return observable.Bulkhead(e.b, o, e.bulkheadOpts()...)
}

// WrapSingle and WrapMaybe wrap a Single and an OptionalSingle.
func (e *env) WrapSingle(s rxgo.Single) rxgo.Single {
	if !e.wrapped {
		return s
	}
	return single.Bulkhead(e.b, s, e.bulkheadOpts()...)
}

func (e *env) WrapMaybe(s rxgo.OptionalSingle) rxgo.OptionalSingle {
	if !e.wrapped {
		return s
	}
	return maybe.Bulkhead(e.b, s, e.bulkheadOpts()...)
}

// Log records one observation of the consumer.
func (e *env) Log(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
}

func (e *env) transcript() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// Item formats an item.
func Item(it rxgo.Item) string {
	if it.E != nil {
		return "error " + it.E.Error()
	}
	return value(it.V)
}

func value(v any) string {
	switch v := v.(type) {
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case rxgo.TimestampItem:
		return "ts " + v.Timestamp.UTC().Format(time.RFC3339Nano) + " " + value(v.V)
	case rxgo.Observable:
		return "an Observable"
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// Drain observes it with the consumer's options and logs every item and
// the end.
func (e *env) Drain(it rxgo.Iterable) {
	for item := range it.Observe(e.Opts()...) {
		e.Log("%s", Item(item))
	}
	e.Log("end")
}

// DrainAll drains an Observable of Observables, each inner one on a
// goroutine of its own (GroupBy, Window*), and logs each inner one's items
// on one line.
func (e *env) DrainAll(it rxgo.Iterable) {
	var wg sync.WaitGroup
	for item := range it.Observe(e.Opts()...) {
		inner, ok := item.V.(rxgo.Observable)
		if !ok {
			e.Log("%s", Item(item))
			continue
		}
		wg.Go(func() {
			var got []string
			for it := range inner.Observe(e.Opts()...) {
				got = append(got, Item(it))
			}
			e.Log("inner %v", got)
		})
	}
	wg.Wait()
	e.Log("end")
}

// Get logs the outcome of a Single's or an OptionalSingle's Get.
func (e *env) Get(s interface {
	Get(...rxgo.Option) (rxgo.Item, error)
}) {
	it, err := s.Get(e.Opts()...)
	switch {
	case err != nil:
		e.Log("get: %v", err)
	case it == rxgo.OptionalSingleEmpty:
		e.Log("get: empty")
	default:
		e.Log("get: %s", Item(it))
	}
}

// Wait logs the end of a Disposed.
func (e *env) Wait(d rxgo.Disposed) {
	<-d
	e.Log("disposed")
}

// record is what one run left.
type record struct {
	transcript []string // what the consumer saw, with "stuck" where it waited in vain
	left       int      // goroutines left blocked once the consumer is done (or stuck)
	held       int      // permits held then
	leftAfter  int      // goroutines left once the source's context is cancelled
	heldAfter  int      // permits held then
}

// bound is how long a consumer may wait, on the bubble's clock, before it
// is taken as stuck.
const bound = time.Minute

// run runs c once, in a bubble, and returns what it left. Everything the
// run started must end once every context is cancelled: the bubble panics
// otherwise.
func run(t *testing.T, c Case, k kind, mode string, wrapped bool) (r record) {
	t.Helper()
	if testing.Verbose() {
		t.Logf("run %s / %s / %s / wrapped %v", c.Name, k.name, mode, wrapped)
	}
	synctest.Test(t, func(t *testing.T) {
		b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		srcCtx, cancelSrc := context.WithCancel(context.Background())
		wrapCtx, cancelWrap := context.WithCancel(context.Background())
		e := &env{kind: k, mode: mode, wrapped: wrapped, b: b, early: c.Early, srcCtx: srcCtx, wrapCtx: wrapCtx}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Run(e)
		}()
		stuck := !waitFor(done)
		if stuck {
			e.Log("stuck")
		}
		settle()
		r.left = bubbleGoroutines() - 1 - alive(done)
		r.held = b.Metrics().InFlightCalls
		cancelSrc()
		settle()
		if stuck && waitFor(done) {
			settle()
		}
		r.leftAfter = bubbleGoroutines() - 1 - alive(done)
		r.heldAfter = b.Metrics().InFlightCalls
		cancelWrap()
		time.Sleep(bound) // the bubble's clock: timers of ended stages fire, and they see their context's end
		synctest.Wait()
		if !waitFor(done) {
			t.Errorf("%s/%s/%s: the consumer is still waiting once every context is cancelled", c.Name, k.name, mode)
		}
		r.transcript = e.transcript()
		if c.Unordered {
			slices.Sort(r.transcript)
		}
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Errorf("%s/%s/%s: %d permit(s) held, %d call(s) queued once every context is cancelled", c.Name, k.name, mode, m.InFlightCalls, m.QueuedCalls)
		}
	})
	return r
}

// bubbleGoroutines counts the goroutines of the caller's bubble, the
// caller included (runtime.NumGoroutine would count the runtime's and the
// test framework's as they come and go).
func bubbleGoroutines() int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	header, _, _ := bytes.Cut(buf, []byte("\n"))
	i := bytes.Index(header, []byte("synctest bubble "))
	if i < 0 {
		panic("bubbleGoroutines called outside a bubble")
	}
	bubble := header[i : i+bytes.IndexByte(header[i:], ']')+1]
	return bytes.Count(buf, bubble)
}

// settle lets the bubble's clock run a bound further, so that what is left
// is what stays blocked for good, not a timer about to fire.
func settle() {
	synctest.Wait()
	time.Sleep(bound)
	synctest.Wait()
}

// waitFor waits for done on the bubble's clock, at most bound.
func waitFor(done <-chan struct{}) bool {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

func alive(done <-chan struct{}) int {
	select {
	case <-done:
		return 0
	default:
		return 1
	}
}

// Outcomes of a comparison.
const (
	same     = "same"
	heldCtx  = "class 5: permit held until the run's context ends"
	heldWrap = "class 5: permit held until the context given to Bulkhead ends"
)

// compare classifies a wrapped run against the plain one: the same, a
// documented class-5 difference, or "" (a difference the suite fails on),
// with a description of the difference.
func compare(plain, wrapped record) (string, string) {
	if !slices.Equal(plain.transcript, wrapped.transcript) {
		return "", fmt.Sprintf("plain saw %q, wrapped %q", plain.transcript, wrapped.transcript)
	}
	// Fewer goroutines left than plain is the same behaviour: rxgo's
	// operators after FromChannel merge its context with theirs
	// (onecontext, one goroutine each), the wrapper's have none to merge.
	if wrapped.left <= plain.left && wrapped.held == 0 && wrapped.leftAfter <= plain.leftAfter && wrapped.heldAfter == 0 {
		return same, ""
	}
	desc := fmt.Sprintf("goroutines left %d/%d (plain/wrapped), then %d/%d; permits held %d, then %d",
		plain.left, wrapped.left, plain.leftAfter, wrapped.leftAfter, wrapped.held, wrapped.heldAfter)
	if wrapped.heldAfter > 0 || wrapped.leftAfter > plain.leftAfter {
		return heldWrap, desc
	}
	return heldCtx, desc
}

// Case is one behaviour of rxgo, run on each kind of source (or once, on
// an rxgo factory: Kinds false).
type Case struct {
	Group string // operator, factory, connectable, option, Single, OptionalSingle
	Name  string
	Tests string // the rxgo v2.5.0 tests it covers (without the Test_ prefix and the type)
	// Early: the consumer stops reading before the source's end (Take,
	// First, a StopOnError consumer at an error followed by more items).
	// Bulkhead is then given a context (the idiom that releases the
	// permit), cancelled last; a context the consumer propagates replaces
	// it.
	Early     bool
	Unordered bool // the items may come in any order (pools, merges)
	// Racy: whether rxgo itself stops reading the source early races
	// (plain as well as wrapped), so a run is the same or, some of the
	// time, class 5 held until the run's context ends; the table says so
	// instead of naming the kinds of one run.
	Racy    bool
	Factory bool // the source is an rxgo factory: run once, not per kind
	Run     func(e *env)
}

func (c Case) kinds() []kind {
	if c.Factory {
		return []kind{factoryKind}
	}
	return kinds
}

// result is the outcome of one case in one mode over its kinds.
type result struct {
	outcome map[string][]string // outcome -> kinds
	diffs   []string
}

func runCase(t *testing.T, c Case, mode string) result {
	res := result{outcome: map[string][]string{}}
	for _, k := range c.kinds() {
		plain := run(t, c, k, mode, false)
		wrapped := run(t, c, k, mode, true)
		outcome, desc := compare(plain, wrapped)
		if outcome == "" {
			res.diffs = append(res.diffs, fmt.Sprintf("%s: %s", k.name, desc))
			continue
		}
		res.outcome[outcome] = append(res.outcome[outcome], k.name)
	}
	return res
}

// cell is the table's text for a result.
func (r result) cell(c Case) string {
	if len(r.diffs) > 0 {
		return "DIFFERS: " + strings.Join(r.diffs, "; ")
	}
	if c.Racy && len(r.outcome[heldWrap]) == 0 {
		return "same, or (rxgo races) " + heldCtx
	}
	var parts []string
	for _, o := range []string{same, heldCtx, heldWrap} {
		ks := r.outcome[o]
		if len(ks) == 0 {
			continue
		}
		if len(ks) == len(c.kinds()) {
			parts = append(parts, o)
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s)", o, strings.Join(ks, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}
