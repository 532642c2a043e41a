// Package redis is a fleet-wide bulkhead: one limit of concurrent calls
// shared by every replica of a service, its permits held as leases in Redis
// (github.com/redis/go-redis/v9). A *Bulkhead implements bulkhead.Bulkhead,
// so every operator of the core (flowable, observable, single, maybe,
// completable, the HTTP and gRPC integrations) works over it unchanged.
//
// A process creates one Store over its go-redis client and one Bulkhead per
// partner (NewBulkhead, a Registry, or NewRegistryFromFile for the
// configuration files of package fileconfig with store: redis). For keys
// you do not control (tenants, client ids), Registry.Acquire(key, opts) is the
// keyed path: with WithIdleTimeout and WithMaxBulkheads the registry
// evicts idle bulkheads (they leave the Store, and their keys in Redis
// expire by themselves) and sends the keys beyond its cap to a shared
// catch-all, never letting one key run two bulkheads at once in a
// process. Acquiring never blocks and never
// makes a round trip on the caller's goroutine: a waiting call is a record
// in this process, sent to Redis with the others of the moment by the
// Store's dispatcher, one pipelined round trip at a time, on its own
// goroutine (no goroutine is started per round trip). Redis keeps a
// ticket per waiting call, so the oldest waiter of the whole fleet gets the
// next permit; waiters are woken by a pub/sub message when a permit comes
// back anywhere, and by a poll every StoreConfig.PollInterval because
// pub/sub is lossy and expiries publish nothing. The callbacks of grants
// decided by a round trip run on the Store's delivery goroutine: they must
// not block for long, a panic there is not recovered, and one that closes
// the Store must do it on a goroutine of its own, go s.Close() (Close
// waits for the delivery goroutine: called on it, it never returns).
//
// Each grant is a lease with an id, an expiry (StoreConfig.LeaseTTL) and a
// fencing token that increases with every grant of the bulkhead
// (Permit.Lease, LeaseOf). One renewal loop per process extends every lease
// it holds in one pipelined round trip per StoreConfig.RenewInterval; the
// leases of a crashed process expire and the next round trip of any replica
// reclaims them.
//
// When Redis cannot be reached, each bulkhead follows its Config.Unreachable
// Policy: FailClosed rejects with a *StoreError matching ErrUnavailable
// (never bulkhead.ErrBulkheadFull), FailOver admits calls through a local
// bulkhead.Semaphore of Config.LocalFraction of the fleet limit. The Store
// bounds every round trip by StoreConfig.Timeout itself, whatever the
// client's options, probes Redis every StoreConfig.ProbeInterval and
// returns to the fleet as soon as it answers. Credentials and ACL errors
// (NOAUTH, WRONGPASS, NOPERM) are answers, not outages: every call is
// rejected with a *StoreError matching ErrRefused whatever the Policy, until
// a probe passes. Store.OnEvent reports the changes (StoreDown,
// StoreRefused, StoreUp) and, with Logger installed, go-redis's own
// messages about the Store's round trips.
//
// The tickets of a crashed process stop blocking the fleet's queue within
// StoreConfig.TicketTTL (2s) after their last renewal.
//
// What a Redis restart without persistence does: every lease and ticket is
// lost. Calls already running keep running; within one RenewInterval their
// processes add their leases back (if the permits are still free), so the
// window in which newcomers can be admitted beyond the limit is at most one
// RenewInterval plus the restart itself. A lease that cannot be added back
// is reported lost (Permit.Lost, FleetMetrics.LeasesLost). Fencing tokens
// keep increasing across the restart (the counter never issues a number
// below the server clock in microseconds), so a resource that checks
// tokens refuses the older holders. Waiting calls ask again and get new
// tickets. A failover to a replica that lagged is the same, unless
// StoreConfig.WaitReplicas makes every grant wait for the replicas.
//
// Redis Cluster (a ClusterClient): the keys of a bulkhead share the hash
// tag {name}, so every script runs on one master. Valkey works as Redis
// does (make test-valkey).
package redis
