// Package rxtest holds the test fixtures shared by the tests of the rxgo
// bulkhead operators (observable, single, maybe) and of package rxpermit:
//
//   - [Suite], the behaviour every such operator shares (release rules,
//     rejection, queueing, FIFO, withdrawal, options), which each operator
//     package runs against its public entry point and package rxpermit
//     against what it builds;
//   - [GrantRacingCancel], the hammer of the grant / cancel race;
//   - [Partner], a bulkhead with the permit-leak check and an [Events] log;
//   - [Probe], a cold source that counts its observations, with
//     [ColdSingle] and [ColdOptionalSingle] to pass it as a Single or a Maybe;
//   - [Drain] and [Values], channel readers.
//
// It is imported by tests only.
package rxtest
