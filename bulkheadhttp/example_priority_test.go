package bulkheadhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
)

// A server whose partners share the hub's budget: a request that comes
// with failsafe-go's X-Failsafe-Priority is admitted in the class it maps
// to (here 4, very high: "interactive"), and the handler's context carries
// that class for its own outgoing calls, which send it on.
func ExampleWithPriorityClasses() {
	cls := func(name string) bulkhead.ClassConfig {
		return bulkhead.ClassConfig{Name: name, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}
	}
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 100, MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{cls("interactive"), cls("batch")}})
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithBudget(hub, nil))
	classes := bulkhead.PriorityClasses{"batch", "batch", "interactive", "interactive", "interactive"}
	mw, _ := bulkheadhttp.NewMiddleware(reg, bulkheadhttp.WithPriorityClasses(classes),
		bulkheadhttp.WithKey(func(*http.Request) string { return "edi" }))
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("class:", bulkhead.PriorityFrom(r.Context()), "in use:", hub.Metrics().Classes[0].InUse)
	})))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	req.Header.Set(bulkhead.PriorityHeader, "4")
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output: class: interactive in use: 1
}
