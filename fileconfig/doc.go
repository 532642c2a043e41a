// Package fileconfig loads the bulkheads of a bulkhead.Registry from a
// configuration file in the shape of resilience4j's Spring properties:
// named base configs and per-instance overrides.
//
//	configs:
//	  default: { maxConcurrentCalls: 20, maxWaitDuration: 50ms, maxQueuedCalls: 100 }
//	  big:     { baseConfig: default, maxConcurrentCalls: 60 }
//	instances:
//	  walmart:   { baseConfig: big }
//	  carrefour: { maxWaitDuration: 0s, maxQueuedCalls: unbounded }
//
// A "budgets" section describes hub budgets (bulkhead.Budget), each with
// its classes and groups; NewBudgets builds them and Budgets.Apply reloads
// them (budget.go, BudgetSpec). The top-level key "budget" joins the
// registry to one of them, each entry's "group" and "class" saying how its
// bulkheads join: Budgets.NewRegistry builds that registry, and Apply keeps
// its groups and classes (partners.go).
//
// Loading has four steps, one file each: the spec types ([File], [Spec],
// [Duration], spec.go), decoding ([Decode], which [File.UnmarshalJSON] and
// [File.UnmarshalYAML] call, decode.go), resolution (inheritance and the
// rules of bulkhead.Config, [File.Resolve], resolve.go) and applying to a
// registry ([NewRegistry], [Apply], apply.go). The settings themselves are
// one table, specFields in fields.go. The package has no YAML dependency:
// the types carry json and yaml struct tags and implement the unmarshalers
// that encoding/json and the usual YAML libraries call.
//
// A file fails as a whole, with every problem it has: decoding goes on
// after a bad value and resolves what it could decode, so a bad duration in
// one instance and a negative count in another are both reported. Each
// problem is an [*Error] naming the entry, the key and the value, and
// matching bulkhead.ErrInvalidConfig. docs/configuration.md describes the
// format.
//
// # Adding a setting
//
// A setting is one field of Spec and one row of specFields; decoding,
// inheritance, key spelling, "unknown key" messages and the reporting of
// problems follow from the row.
//
//  1. Add a pointer field to Spec, with json and yaml tags: nil inherits,
//     non-nil overrides (a zero value overrides too). If the setting
//     configures something besides bulkhead.Config (a limit algorithm, a
//     store), add the resolved value to Entry.
//  2. Add a row to specFields with setting(key, configField, field,
//     decode, set): the key as files write it; the bulkhead.Config field
//     it sets, if any, so that Config.Validate's errors for that field are
//     reported at the key; the address of the Spec field; a decode func
//     from the decoded value (a string, a number, a mapping ...) to the
//     field's type; and a set func that copies it onto the Entry.
//  3. Rules that Config.Validate does not know go in the row's check func,
//     which sees the resolved Entry; its problems are reported at each
//     entry that sets the key.
//  4. Read the Entry field in apply.go, where the registry is configured.
//
// A setting whose value is a mapping of its own, such as
// adaptive: {algorithm: gradient2, min: 5, max: 200}, decodes it with
// decodeMapping and a mappingKeys table of its subkeys: the subkeys get the
// same relaxed spelling and checks as an entry's keys, and problems name
// them as "adaptive.min". Add the new key to the decode tests and to the
// seeds of FuzzRegistryConfigJSON, and document it in docs/configuration.md.
package fileconfig
