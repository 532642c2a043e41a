package slogevents_test

import (
	"log"
	"log/slog"
	"os"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/slogevents"
)

// Rejections are logged as warnings with the bulkhead's name and the reason.
func ExampleLogger() {
	// A text handler without the time, so that the output is stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))

	bh, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	remove := bh.OnEvent(slogevents.Logger{Logger: logger}.Log)
	defer remove()

	bh.TryAcquirePermission() // permitted: not logged
	bh.TryAcquirePermission() // rejected
	bh.FinishCall()           // finished: not logged
	// Output:
	// level=WARN msg="bulkhead call rejected" bulkhead=walmart reason="no wait"
}

// Logging the rejections of every bulkhead of a registry. Bulkheads created
// later need their own OnEvent call.
func ExampleLogger_registry() {
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		log.Fatal(err)
	}
	// Every bulkhead of the registry, present and future, logs its
	// rejections and cancellations.
	stop := registry.OnEvent(slogevents.Logger{Logger: slog.Default()}.Log)
	defer stop()
	for _, name := range []string{"walmart", "carrefour"} {
		if _, err := registry.Get(name); err != nil {
			panic(err)
		}
	}
}
