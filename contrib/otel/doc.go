// Package otel exports the state of a bulkhead.Registry as OpenTelemetry
// metrics: observable gauges for each Metrics field and an observable
// counter of calls by kind, with the bulkhead's name as the "name"
// attribute. The counts come from a callcount.Counter, so a bulkhead
// created after Start is counted from its first call. It lives in its own
// module so that the core module does not depend on OpenTelemetry.
package otel
