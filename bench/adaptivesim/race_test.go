//go:build race

package adaptivesim

// sweepStep is coarser under the race detector, which makes the simulation
// about ten times slower: make test runs every module with -race. The
// published figures (-update, without -race) sweep in steps of 5.
const sweepStep = 25

// seedCount is how many seeds TestSimulationAcrossSeeds runs.
const seedCount = 3
