package testkit_test

import (
	"fmt"
	"runtime"

	"github.com/rxbulkhead/bulkhead/testkit"
)

// A callback may return, panic or leave its goroutine with runtime.Goexit
// (t.FailNow does); RunToEnd tells which, so a test can check that a permit
// comes back every way.
func ExampleRunToEnd() {
	fmt.Println(testkit.RunToEnd(func() {}))
	fmt.Println(testkit.RunToEnd(func() { panic("partner down") }))
	fmt.Println(testkit.RunToEnd(runtime.Goexit) == testkit.Goexited)
	// Output:
	// <nil>
	// partner down
	// true
}
