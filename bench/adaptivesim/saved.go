package adaptivesim

import "time"

// Command is how the published figures are produced.
const Command = "make -f bench/adaptivesim/adaptivesim.mk adaptive-matrix"

// Matrix is a whole run of the matrix, as TestMatrix saves it and Section
// renders it.
type Matrix struct {
	Date     string
	Seeds    int
	Names    []string
	Duration time.Duration // wall time of the run
	Results  []CellResult
}
