// Package bulkhead provides a semaphore bulkhead whose permit is acquired
// asynchronously: a call that has to wait for a permit is a small record in a
// bounded FIFO (or LIFO) queue, not a parked goroutine, and nothing blocks the
// goroutine that asks.
//
// A [Semaphore] limits the number of concurrent calls to one dependency (one
// partner, one downstream service). [Semaphore.AcquirePermissionAsync] returns
// an [Acquisition], a future with three outcomes: granted (Err() == nil),
// rejected (a [*FullError], which matches [ErrBulkheadFull]) or withdrawn by
// [Acquisition.Cancel] ([ErrCancelled]). Whoever holds a granted permit gives
// it back exactly once, with [Semaphore.FinishCall] when the call ran or
// [Semaphore.ReleasePermission] when it did not.
//
// A semaphore does not protect a goroutine that blocks. For blocking code
// (a client without context support), package
// [github.com/rxbulkhead/bulkhead/pool] runs calls on a bounded set of
// workers with a bounded queue, the "thread-pool" bulkhead; docs/guide.md
// says when to use which.
//
// A [Registry] keeps one bulkhead per name (per partner) with named
// configurations. For keys you do not control (tenants, client addresses),
// its keyed path ([Registry.TryAcquirePermission],
// [Registry.AcquirePermission] and [Registry.AcquirePermissionAsync], each
// with a key, [CallOptions] and a [Lease]) with [WithIdleTimeout] and
// [WithMaxBulkheads] bounds the number of bulkheads safely. A [Clock] can
// be injected with [WithClock]; the testkit package provides a virtual one.
//
// A [Budget] is the capacity a hub shares among all its partners'
// bulkheads: a call takes its partner's permit first, then weight permits
// of the budget ([BudgetPartner.Call]), divided among the partners that
// want it by max-min fairness, with priority classes, guaranteed shares
// lent while unused, and a bound on how long a heavy call waits for light
// ones ([BudgetConfig]); docs/design.md, "The hub budget", has the rules.
// [WithBudget] joins every bulkhead of a [Registry] to a budget: a keyed
// call then takes [CallOptions.Weight] permits of the budget, of class
// [CallOptions.Class], and its [Lease] gives both levels back. A call's
// class travels in its context ([WithPriority]) and, through bulkheadhttp
// and contrib/grpc, across hops in failsafe-go's header ([PriorityHeader],
// [PriorityClasses]).
//
// The reactive operators in the sub-packages (flowable, observable, single,
// maybe, completable, operator) depend only on the [Bulkhead] interface.
// Each is a function named Bulkhead (observable.Bulkhead, flowable.Bulkhead,
// ...) because each is that package's one operator, applied as
// resilience4j's BulkheadOperator is; the package name says which reactive
// type it wraps.
//
// Limits follow one rule ([Config]): zero means none (no wait, no queue),
// and "no bound" is the named constant [Unbounded] (or [NoTimeout]).
//
// Around the core: package fileconfig loads a Registry from a configuration
// file, package callcount counts the calls of a Registry's bulkheads (for
// metrics exporters), package slogevents logs rejections with log/slog.
package bulkhead
