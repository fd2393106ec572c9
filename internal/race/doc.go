// Package race says whether the binary was built with the race detector.
// Tests that compute alone (no goroutines of their own) use it to skip
// under -race, where they run several times slower and check no
// concurrency; the plain test pass still runs them.
package race
