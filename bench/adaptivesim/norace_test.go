//go:build !race

package adaptivesim

// sweepStep is the step of the sweep for the best static limit.
const sweepStep = 5

// seedCount is how many seeds TestSimulationAcrossSeeds runs.
const seedCount = 8
