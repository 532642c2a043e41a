package fileconfig

import (
	"maps"
	"slices"

	"github.com/rxbulkhead/bulkhead"
)

// NewRegistry resolves f and returns a bulkhead.Registry whose default
// configuration is f's "default", with every config of f added and every
// instance of f created. opts are applied first, so a config of f replaces
// a bulkhead.WithConfig of the same name, and the configs f does not name
// stay: if f has no "default", the registry's default is the one opts give
// with bulkhead.WithConfig(bulkhead.DefaultConfigName, ...), else
// bulkhead.DefaultConfig(), as Apply keeps a registry's default. (f's own
// entries still resolve by Resolve's rule, from bulkhead.DefaultConfig().)
// It fails, creating nothing, with the error of Resolve, an *Error for
// every entry whose store is redis (a fleet bulkhead: see Store), an *Error
// if f names a budget (File.Budget; such a registry is built by
// Budgets.NewRegistry), or the error wrapping bulkhead.ErrRegistryFull of
// the first instance (in name order) that does not fit when opts cap the
// registry (bulkhead.WithMaxBulkheads).
func NewRegistry(f File, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, error) {
	res, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	if err := refuseRedis(res); err != nil {
		return nil, err
	}
	if res.Budget != "" {
		return nil, &Error{Key: "budget", Value: res.Budget, Problem: "a registry whose bulkheads join a budget is built by Budgets.NewRegistry (NewBudgets of the same file)"}
	}
	return newRegistry(f, res, opts)
}

// newRegistry builds the registry of f, resolved in res and checked.
func newRegistry(f File, res Resolved, opts []bulkhead.RegistryOption) (*bulkhead.Registry, error) {
	r, err := bulkhead.NewRegistry(res.Configs[bulkhead.DefaultConfigName].Config, opts...)
	if err != nil {
		return nil, err
	}
	if err := applyResolved(r, f, res); err != nil {
		// An instance did not fit (opts capped r with WithMaxBulkheads).
		// Nobody has seen r, but a budget of opts (WithBudget) has: the
		// instances created so far joined it, and Remove makes them leave
		// (their flows are idle). The catch-all cannot be removed; it
		// stays an idle partner of that budget (see Budgets.NewRegistry).
		for _, s := range r.All() {
			r.Remove(s.Name())
		}
		return nil, err
	}
	return r, nil
}

// Apply reloads a configuration into the live registry r. It resolves f
// first and, if that fails, returns the error and changes nothing.
// Otherwise it adds or replaces every config of f (the one named "default"
// becomes the configuration of bulkheads created later by Registry.Get) and
// applies every instance of f with Registry.Configure: an existing bulkhead
// changes with Semaphore.ChangeConfig, a missing one is created with its
// configuration, so no caller ever sees it with another one.
//
// What f says nothing about stays as it is: if f has no config named
// "default", the registry keeps its default (the one it was built with in
// code, or by an earlier file), and bulkheads created later get it;
// configs of the registry that f does not name are kept; bulkheads that f
// does not list as instances keep their configuration, and none is
// removed. An empty file changes nothing. The entries of f itself resolve
// by Resolve's rule, which does not read the registry: in a file without
// "default", an entry without baseConfig starts from
// bulkhead.DefaultConfig(), not from the registry's default. Each bulkhead changes atomically, with
// ChangeConfig's guarantees (growth grants waiters at once, shrinking
// blocks nobody), but not all of them at the same instant.
//
// The budget of a registry built by Budgets.NewRegistry, and the group and
// class each of its bulkheads joined it with, are fixed when it is built
// (a budget's partner keeps its group). A file without the top-level
// budget key says nothing about them. A file with one is refused as a
// whole, before anything changes, with an *Error naming the key, if it
// names another budget, if r was not built by Budgets.NewRegistry, or if
// its "default" config or an instance would get another group or class
// than r gives that bulkhead (an instance new to r gets the "default"
// config's of when r was built). To change them, restart with the new
// file. Apply refuses too a file whose budgets section drops a group of
// r's budget that r's bulkheads joined with, whether or not it has the
// budget key. Reload the budgets themselves with Budgets.Apply, after
// Apply: a file that Apply accepts keeps every group and class r uses.
//
// A file that resolves can still not fit r: if r is capped
// (bulkhead.WithMaxBulkheads) and an instance of f that r does not hold
// finds it full, Apply returns that instance's error (it wraps
// bulkhead.ErrRegistryFull) and keeps what it had applied: every config of
// f, and the instances before that one in name order. Apply is atomic
// only with respect to the checks above; size the cap for the file's
// instances.
//
// Waiters granted because a bulkhead grew have their OnDone callbacks run
// on the goroutine calling Apply, as with ChangeConfig. Concurrent Apply
// calls are not serialised: the last one to change a bulkhead wins, so
// reload from one goroutine.
func Apply(r *bulkhead.Registry, f File) error {
	if r == nil {
		panic("fileconfig: Apply called with a nil *bulkhead.Registry")
	}
	res, err := f.Resolve()
	if err != nil {
		return err
	}
	if err := refuseRedis(res); err != nil {
		return err
	}
	if err := refusePartnerChanges(r, f, res); err != nil {
		return err
	}
	return applyResolved(r, f, res)
}

// applyResolved adds the configs of f (resolved in res: not the built-in
// default res adds when f has none), then configures its instances in name
// order. res has been checked by Resolve, so AddConfig and Configure
// refuse no configuration (each validates again before anything of it
// changes); what can still fail is the creation of an instance in a
// registry that is full (WithMaxBulkheads), after what came before it.
func applyResolved(r *bulkhead.Registry, f File, res Resolved) error {
	for _, name := range slices.Sorted(maps.Keys(f.Configs)) {
		if err := r.AddConfig(name, res.Configs[name].Config); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(res.Instances)) {
		if _, err := r.Configure(name, res.Instances[name].Config); err != nil {
			return err
		}
	}
	return nil
}
