package redis

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// NewRegistryFromFile resolves f, a configuration file of package
// fileconfig, and returns a Registry on s whose default configuration is f's
// "default", with every config of f and every instance created. Every entry
// must have store redis (set it once in "default": instances inherit it);
// its store.unreachable and store.localFraction become Unreachable and
// LocalFraction. It fails, creating nothing, with Resolve's error, or with
// an error naming each entry whose store is local (use
// fileconfig.NewRegistry for those) or whose configuration a fleet bulkhead
// refuses (LIFO), or with NewBulkhead's error for the first instance that
// cannot be created (a name with a brace, or one s already has a bulkhead
// of): the instances created before it leave s, and their names are free. A
// file with a top-level budget key is refused with a *fileconfig.Error
// naming it: a hub budget (bulkhead.Budget) is one process's, and fleet
// bulkheads do not join one.
func NewRegistryFromFile(s *Store, f fileconfig.File) (*Registry, error) {
	res, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	if res.Budget != "" {
		return nil, &fileconfig.Error{Key: "budget", Value: res.Budget, Problem: "a fleet registry joins no budget (a bulkhead.Budget is one process's): drop the key, or load the file with fileconfig's Budgets.NewRegistry for local bulkheads"}
	}
	configs := make(map[string]Config, len(res.Configs))
	var errs []error
	convert := func(kind, name string, e fileconfig.Entry) (Config, bool) {
		if e.Store.Type != fileconfig.StoreRedis {
			errs = append(errs, fmt.Errorf("redis: %s %q: store is local, not redis: set store: redis (in default, for every entry), or load the file with fileconfig.NewRegistry", kind, name))
			return Config{}, false
		}
		c := Config{Config: e.Config, LocalFraction: e.Store.LocalFraction}
		if e.Store.Unreachable == fileconfig.FailOver {
			c.Unreachable = FailOver
		}
		if err := c.validateFor(name); err != nil {
			errs = append(errs, fmt.Errorf("redis: %s %q: %w", kind, name, err))
			return Config{}, false
		}
		return c, true
	}
	for _, name := range slices.Sorted(maps.Keys(res.Configs)) {
		if c, ok := convert("config", name, res.Configs[name]); ok {
			configs[name] = c
		}
	}
	instances := make(map[string]Config, len(res.Instances))
	for _, name := range slices.Sorted(maps.Keys(res.Instances)) {
		if c, ok := convert("instance", name, res.Instances[name]); ok {
			instances[name] = c
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var opts []RegistryOption
	for name, c := range configs {
		opts = append(opts, WithConfig(name, c))
	}
	r, err := NewRegistry(s, configs[bulkhead.DefaultConfigName], opts...)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(instances)) {
		if _, _, err := r.cat.PinWith(name, instances[name]); err != nil {
			// The instances created so far leave the Store, freeing
			// their names: nobody holds the registry to use them.
			for _, b := range r.cat.All() {
				b.retire()
			}
			return nil, r.fullError(name, err)
		}
	}
	return r, nil
}
