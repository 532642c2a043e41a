package redis_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead/fileconfig"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// NewRegistryFromFile creates its instances in name order: one that
// cannot be created (a name the Store already has, a name with a brace)
// fails the call, and the instances created before it must not stay on
// the Store, holding their names, with nobody to use or close them.
func TestNewRegistryFromFileThatFailsLeavesNoBulkheadOnTheStore(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	newBulkhead(t, s, "taken", fleetConfig(1, 0))
	for i, tc := range []struct{ bad, want string }{
		{"taken", "already has a bulkhead of that name"},
		{"z{x}", "must not contain '{' or '}'"},
	} {
		acme, beta := fmt.Sprint("acme", i), fmt.Sprint("beta", i) // both before bad in name order
		var f fileconfig.File
		if err := json.Unmarshal([]byte(`{
		  "configs": {"default": {"maxConcurrentCalls": 2, "store": "redis"}},
		  "instances": {"`+acme+`": {}, "`+tc.bad+`": {}, "`+beta+`": {}}
		}`), &f); err != nil {
			t.Fatal(err)
		}
		reg, err := rxredis.NewRegistryFromFile(s, f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("instance %q: NewRegistryFromFile = %v, %v; want an error saying %q", tc.bad, reg, err, tc.want)
		}
		if reg != nil {
			t.Fatalf("instance %q: a registry came back with the error", tc.bad)
		}
		// The names of the instances before the bad one are free again.
		for _, name := range []string{acme, beta} {
			b, err := rxredis.NewBulkhead(s, name, fleetConfig(1, 0))
			if err != nil {
				t.Fatalf("instance %q: after the failed NewRegistryFromFile: %v", tc.bad, err)
			}
			testkit.CheckPermits(t, b)
		}
	}
}
