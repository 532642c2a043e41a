package flowable

import (
	"runtime"
	"strings"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// hidden hides whether the Publisher it wraps is fuseable: its method set is
// Publisher's, so Bulkhead takes the wrapping path.
type hidden[T any] struct{ Publisher[T] }

func TestSynchronousSourcesAreFuseable(t *testing.T) {
	for name, p := range map[string]Publisher[int]{
		"Range":     Range(0, 3),
		"FromSlice": FromSlice([]int{1}),
		"Just":      Just(1, 2),
	} {
		if _, ok := p.(fuseable[int]); !ok {
			t.Errorf("%s is not fuseable", name)
		}
	}
	if _, ok := Publisher[int](hidden[int]{Range(0, 3)}).(fuseable[int]); ok {
		t.Error("the test's hidden wrapper is fuseable: the foreign path is not tested")
	}
}

// callerOfOnNext records the function that called the subscriber's OnNext
// for each element.
type callerOfOnNext struct {
	Funcs[int]
	callers map[string]int
}

func (c *callerOfOnNext) OnNext(int) {
	var pcs [1]uintptr
	runtime.Callers(2, pcs[:]) // skip runtime.Callers and OnNext itself
	f, _ := runtime.CallersFrames(pcs[:]).Next()
	c.callers[f.Function]++
}

// TestFusedSourceDeliversElementsWithoutTheOperator pins the point of
// fusion: through Bulkhead, a fused source calls the subscriber's OnNext
// from its own emission loop, while a foreign source goes through the
// operator's Subscriber (one frame per element).
func TestFusedSourceDeliversElementsWithoutTheOperator(t *testing.T) {
	b, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		src        Publisher[int]
		wantCaller string
	}{
		{"fused", Range(0, 5), ".(*pull[...]).emit"},
		{"foreign", hidden[int]{Range(0, 5)}, ".(*bulkheadSubscriber[...]).OnNext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &callerOfOnNext{callers: map[string]int{}}
			Bulkhead(b, tc.src).Subscribe(s)
			if len(s.callers) != 1 {
				t.Fatalf("OnNext called from %v, want one caller", s.callers)
			}
			for f, n := range s.callers {
				if !strings.HasSuffix(f, tc.wantCaller) || n != 5 {
					t.Fatalf("OnNext called %d times from %s, want 5 from *%s", n, f, tc.wantCaller)
				}
			}
		})
	}
	if m := b.Metrics(); m.InFlightCalls != 0 {
		t.Fatalf("permit leaked: %+v", m)
	}
}
