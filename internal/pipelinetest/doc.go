// Package pipelinetest is the behaviour table every bulkhead operator of
// the library must pass, whatever its pipeline: rxgo's Observable, Single
// and Maybe, Completable, Flowable, and samber/ro's Observable in the
// nested module contrib/ro (a nested module whose import path lies under
// this module's may import its internal packages).
//
// [Rules] runs each scenario (source completes, fails, bulkhead full, wait
// expires, granted after a wait, cancelled while pending, cancelled before
// or after a value) through each [Kind] in a testing/synctest bubble and
// checks the same outcome: what the consumer saw, whether the source was
// subscribed, and how the permit came back (FinishCall publishes
// CallFinished, ReleasePermission nothing, a withdrawal CallCancelled).
// [CoreKinds] are the five operators of the core module, applied through
// package operator. It is imported by tests only.
package pipelinetest
