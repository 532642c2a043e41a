package fileconfig_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

func TestStoreIsInheritedAndWrittenAsATypeOrAMapping(t *testing.T) {
	res := resolveJSON(t, `{
	  "configs": {"default": {"maxConcurrentCalls": 20, "store": {"type": "Redis", "unreachable": "fail-over", "localFraction": 0.25}}},
	  "instances": {"walmart": {}, "acme": {"store": "redis"}, "lab": {"store": "local"}}
	}`)
	want := map[string]fileconfig.Store{
		"walmart": {Type: fileconfig.StoreRedis, Unreachable: fileconfig.FailOver, LocalFraction: 0.25},
		"acme":    {Type: fileconfig.StoreRedis},
		"lab":     {Type: fileconfig.StoreLocal},
	}
	for name, st := range want {
		if got := res.Instances[name].Store; got != st {
			t.Errorf("%s: store %+v, want %+v", name, got, st)
		}
	}
}

func TestBadStoresNameTheEntryAndTheSubkey(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"instances": {"a": {"store": "etcd"}}}`, `bulkhead "a": store "etcd": not a store: want "local" or "redis"`},
		{`{"instances": {"a": {"store": {"type": "redis", "unreachable": "maybe"}}}}`, `store.unreachable`},
		{`{"instances": {"a": {"store": {"type": "redis", "unreachable": "fail-over"}}}}`, `store.localFraction`},
		{`{"instances": {"a": {"store": {"type": "redis", "localFraction": 0.5}}}}`, `must be 0 unless unreachable is fail-over`},
		{`{"instances": {"a": {"store": {"unreachable": "fail-closed"}}}}`, `only a redis store has an unreachable policy`},
		{`{"instances": {"a": {"store": {"type": "redis", "ttl": "1s"}}}}`, `store.ttl`},
	} {
		var f fileconfig.File
		err := json.Unmarshal([]byte(tc.doc), &f)
		if err == nil {
			_, err = f.Resolve()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
}

func TestNewRegistryRefusesARedisStore(t *testing.T) {
	_, err := fileconfig.NewRegistry(decodeJSON(t, `{"instances": {"walmart": {"store": "redis"}}}`))
	if err == nil || !strings.Contains(err.Error(), `bulkhead "walmart": store "redis"`) || !strings.Contains(err.Error(), "contrib/redis") {
		t.Fatalf("err = %v, want a refusal naming the instance and contrib/redis", err)
	}
}
