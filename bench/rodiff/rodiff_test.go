package rodiff_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samber/lo"
	"github.com/samber/ro"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
)

var (
	errFoo = errors.New("foo")
	update = flag.Bool("update", false, "rewrite the ro table in docs/testing.md")
)

// kind is a kind of source: build makes a fresh Observable emitting values,
// then failing with err if err is not nil, else completing.
type kind struct {
	name  string
	build func(values []int, err error) ro.Observable[int]
}

func then(obs ro.Observable[int], err error) ro.Observable[int] {
	if err == nil {
		return obs
	}
	return ro.Concat(obs, ro.Throw[int](err))
}

const timed = "Interval (timed)"

var kinds = []kind{
	{"Just", func(vs []int, err error) ro.Observable[int] { return then(ro.Just(vs...), err) }},
	{"FromChannel", func(vs []int, err error) ro.Observable[int] {
		ch := make(chan int, len(vs))
		for _, v := range vs {
			ch <- v
		}
		close(ch)
		return then(ro.FromChannel(ch), err)
	}},
	{"Defer", func(vs []int, err error) ro.Observable[int] {
		return ro.Defer(func() ro.Observable[int] { return then(ro.Just(vs...), err) })
	}},
	{"SubscribeOn (async)", func(vs []int, err error) ro.Observable[int] {
		return ro.Pipe1(then(ro.Just(vs...), err), ro.SubscribeOn[int](4))
	}},
	{timed, func(vs []int, err error) ro.Observable[int] {
		timed := ro.Pipe2(ro.Interval(time.Second), ro.Take[int64](int64(len(vs))),
			ro.Map(func(i int64) int { return vs[i] }))
		return then(timed, err)
	}},
}

// env builds one run's sources.
type env struct {
	kind    kind
	wrapped bool
	b       *bulkhead.Semaphore
}

// Src is a source of the run's kind, wrapped in a wrapped run.
func (e *env) Src(err error, vs ...int) ro.Observable[int] {
	obs := e.kind.build(vs, err)
	if e.wrapped {
		return bro.Bulkhead(e.b, obs)
	}
	return obs
}

// Case is one samber/ro operator (or a few of one family).
type Case struct {
	Name string
	Run  func(e *env) ro.Observable[string]
	// Untimed: the case combines two sources, which samber/ro itself
	// races on when both tick at the same instant of the bubble's clock
	// (plain as well as wrapped, sometimes for good): not run on the
	// timed kind.
	Untimed bool
}

func str[T any](obs ro.Observable[T]) ro.Observable[string] {
	return ro.Pipe1(obs, ro.Map(func(v T) string { return fmt.Sprint(v) }))
}

func even(v int) bool { return v%2 == 0 }

var cases = []Case{
	{"Map", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Map(func(v int) int { return v * 10 })))
	}, false},
	{"Filter", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3, 4), ro.Filter(even))) }, false},
	{"Take", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3, 4), ro.Take[int](2))) }, false},
	{"Take, then error", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(errFoo, 1, 2, 3), ro.Take[int](2))) }, false},
	{"First", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.First(even))) }, false},
	{"Head", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Head[int]())) }, false},
	{"Last", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Last(even))) }, false},
	{"Tail", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Tail[int]())) }, false},
	{"Skip", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Skip[int](1))) }, false},
	{"SkipWhile", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.SkipWhile(func(v int) bool { return v < 2 })))
	}, false},
	{"TakeWhile", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.TakeWhile(func(v int) bool { return v < 2 })))
	}, false},
	{"TakeLast", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.TakeLast[int](2))) }, false},
	{"SkipLast", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.SkipLast[int](2))) }, false},
	{"ElementAt", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.ElementAt[int](1))) }, false},
	{"Find", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Find(even))) }, false},
	{"Contains", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Contains(even))) }, false},
	{"All", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.All(even))) }, false},
	{"Distinct", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 1, 3), ro.Distinct[int]())) }, false},
	{"Count", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Count[int]())) }, false},
	{"Sum", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Sum[int]())) }, false},
	{"Average", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 6), ro.Average[int]())) }, false},
	{"Max", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 2, 5, 1), ro.Max[int]())) }, false},
	{"Reduce", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Reduce(func(a, v int) int { return a + v }, 0)))
	}, false},
	{"Scan", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Scan(func(a, v int) int { return a + v }, 0)))
	}, false},
	{"Reduce, error", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(errFoo, 1, 2), ro.Reduce(func(a, v int) int { return a + v }, 0)))
	}, false},
	{"DefaultIfEmpty", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil), ro.DefaultIfEmpty(7))) }, false},
	{"StartWith, EndWith", func(e *env) ro.Observable[string] {
		return str(ro.Pipe2(e.Src(nil, 2), ro.StartWith(1), ro.EndWith(3)))
	}, false},
	{"IgnoreElements", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(errFoo, 1, 2), ro.IgnoreElements[int]()))
	}, false},
	{"Pairwise", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.Pairwise[int]())) }, false},
	{"BufferWithCount", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.BufferWithCount[int](2)))
	}, false},
	{"Catch", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(errFoo, 1), ro.Catch(func(error) ro.Observable[int] { return ro.Just(9) })))
	}, false},
	{"OnErrorReturn", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(errFoo, 1), ro.OnErrorReturn(9))) }, false},
	{"OnErrorResumeNextWith", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(errFoo, 1), ro.OnErrorResumeNextWith(ro.Just(8, 9))))
	}, false},
	{"RetryWithConfig (resubscribes: one permit per attempt)", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(errFoo, 1), ro.RetryWithConfig[int](ro.RetryConfig{MaxRetries: 2})))
	}, false},
	{"RepeatWith", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2), ro.RepeatWith[int](2))) }, false},
	{"ConcatWith", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2), ro.ConcatWith(e.Src(nil, 3))))
	}, true},
	{"Concat, error in the first", func(e *env) ro.Observable[string] { return str(ro.Concat(e.Src(errFoo, 1), e.Src(nil, 3))) }, true},
	{"MergeWith", func(e *env) ro.Observable[string] {
		return str(ro.Pipe3(e.Src(nil, 1, 2), ro.MergeWith(e.Src(nil, 3)), ro.ToSlice[int](), ro.Map(func(vs []int) []int { slices.Sort(vs); return vs })))
	}, true},
	{"CombineLatestWith (last pair)", func(e *env) ro.Observable[string] {
		return str(ro.Pipe2(e.Src(nil, 1, 2), ro.CombineLatestWith[int](e.Src(nil, 10)), ro.Tail[lo.Tuple2[int, int]]()))
	}, true},
	{"MergeMap", func(e *env) ro.Observable[string] {
		return str(ro.Pipe3(e.Src(nil, 1, 2), ro.MergeMap(func(v int) ro.Observable[int] { return e.Src(nil, v, v*10) }),
			ro.ToSlice[int](), ro.Map(func(vs []int) []int { slices.Sort(vs); return vs })))
	}, true},
	{"TakeUntil", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.TakeUntil[int](ro.Never())))
	}, false},
	{"Delay", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2), ro.Delay[int](time.Second))) }, false},
	{"Timeout", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2), ro.Timeout[int](time.Hour))) }, false},
	{"Materialize", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(errFoo, 1), ro.Materialize[int]())) }, false},
	{"TapOnNext", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2), ro.TapOnNext(func(int) {}))) }, false},
	{"ThrowIfEmpty", func(e *env) ro.Observable[string] {
		return str(ro.Pipe1(e.Src(nil), ro.ThrowIfEmpty[int](func() error { return errFoo })))
	}, false},
	{"ToSlice", func(e *env) ro.Observable[string] { return str(ro.Pipe1(e.Src(nil, 1, 2, 3), ro.ToSlice[int]())) }, false},
}

// record is what one run left.
type record struct {
	transcript []string
	left, held int
}

const bound = time.Minute

func run(t *testing.T, c Case, k kind, wrapped bool) (r record) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		log := func(s string) { mu.Lock(); r.transcript = append(r.transcript, s); mu.Unlock() }
		done := make(chan struct{})
		var once sync.Once
		end := func() { once.Do(func() { close(done) }) }
		sub := c.Run(&env{kind: k, wrapped: wrapped, b: b}).Subscribe(ro.NewObserver(
			func(v string) { log(v) },
			func(err error) { log("error " + err.Error()); end() },
			func() { log("complete"); end() },
		))
		timer := time.NewTimer(bound)
		select {
		case <-done:
		case <-timer.C:
			log("stuck")
		}
		timer.Stop()
		synctest.Wait()
		time.Sleep(bound)
		synctest.Wait()
		r.left = bubbleGoroutines() - 1
		r.held = b.Metrics().InFlightCalls
		sub.Unsubscribe()
		time.Sleep(bound)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Errorf("%s/%s: %d permit(s) held, %d queued after Unsubscribe", c.Name, k.name, m.InFlightCalls, m.QueuedCalls)
		}
	})
	return r
}

// bubbleGoroutines counts the goroutines of the caller's bubble, the
// caller included.
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
	bubble := header[i : i+bytes.IndexByte(header[i:], ']')+1]
	return bytes.Count(buf, bubble)
}

const (
	docPath    = "../../docs/testing.md"
	beginTable = "<!-- rodiff table: generated by bench/rodiff (go test -run TestDifferentialTable -update); do not edit -->"
	endTable   = "<!-- end of the rodiff table -->"
)

// TestDifferentialTable runs every case on every kind, plain and wrapped,
// fails on any difference, and checks the table in docs/testing.md.
func TestDifferentialTable(t *testing.T) {
	var rows strings.Builder
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	fmt.Fprintf(&rows, "| samber/ro operator | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(kinds)))
	same, total := 0, 0
	for _, c := range cases {
		cells := make([]string, len(kinds))
		for i, k := range kinds {
			if c.Untimed && k.name == timed {
				cells[i] = "not run (two timed sources race in samber/ro itself)"
				continue
			}
			if testing.Verbose() {
				t.Logf("run %s / %s", c.Name, k.name)
			}
			plain, wrapped := run(t, c, k, false), run(t, c, k, true)
			total++
			switch {
			case !slices.Equal(plain.transcript, wrapped.transcript):
				cells[i] = "DIFFERS"
				t.Errorf("%s/%s: plain saw %q, wrapped %q", c.Name, k.name, plain.transcript, wrapped.transcript)
			case wrapped.left > plain.left || wrapped.held != 0:
				cells[i] = "DIFFERS"
				t.Errorf("%s/%s: goroutines left %d/%d (plain/wrapped), permits held %d", c.Name, k.name, plain.left, wrapped.left, wrapped.held)
			default:
				cells[i] = "same"
				same++
			}
		}
		fmt.Fprintf(&rows, "| %s | %s |\n", c.Name, strings.Join(cells, " | "))
	}
	t.Logf("%d runs: %d same", total, same)
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	begin, stop := bytes.Index(doc, []byte(beginTable)), bytes.Index(doc, []byte(endTable))
	if begin < 0 || stop < begin {
		t.Fatalf("%s has no rodiff table between %q and %q", docPath, beginTable, endTable)
	}
	want := "\n" + rows.String()
	if string(doc[begin+len(beginTable):stop]) == want {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:begin+len(beginTable)]...), want...), doc[stop:]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the rodiff table in %s is not what the runs produce: run go test -run TestDifferentialTable -update in bench/rodiff\n--- want\n%s", docPath, want)
}
