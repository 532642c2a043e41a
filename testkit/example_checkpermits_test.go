package testkit_test

import (
	"fmt"
	"log"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// printTB stands in for the *testing.T of a test: it prints failures and
// runs cleanups when told to.
type printTB struct {
	testing.TB
	cleanups []func()
}

func (p *printTB) Helper()                        {}
func (p *printTB) Cleanup(f func())               { p.cleanups = append(p.cleanups, f) }
func (p *printTB) Errorf(format string, a ...any) { fmt.Printf(format+"\n", a...) }

func (p *printTB) endTest() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
}

// The permit-leak check, registered right after the bulkhead is created,
// catches a permit that was never given back.
func ExampleCheckPermits() {
	t := &printTB{} // in a real test: the test's t

	partner, _ := bulkhead.New("partner", bulkhead.DefaultConfig())
	testkit.CheckPermits(t, partner)

	partner.TryAcquirePermission() // the call ran, but nobody called OnComplete

	t.endTest() // the testing package runs cleanups when the test ends
	// Output:
	// testkit: bulkhead "partner": leaked at the end of the test: 1 permit(s) held, 0 call(s) queued (want 0 and 0)
}

// CheckRegistry checks every bulkhead of a Registry, including those created
// on demand during the test.
func ExampleCheckRegistry() {
	t := &printTB{}

	partners, err := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	testkit.CheckRegistry(t, partners)

	walmart, _ := partners.Get("walmart") // created after the check
	walmart.TryAcquirePermission()
	target, _ := partners.Get("target")
	target.TryAcquirePermission()
	target.FinishCall()

	t.endTest()
	// Output:
	// testkit: bulkhead "walmart": leaked at the end of the test: 1 permit(s) held, 0 call(s) queued (want 0 and 0)
}
