//go:build !race

package adaptivesim
