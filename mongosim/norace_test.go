//go:build !race

package mongosim_test

const raceEnabled = false
