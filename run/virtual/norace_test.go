//go:build !race

package virtual

const raceEnabled = false
