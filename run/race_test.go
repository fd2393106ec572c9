//go:build race

package run

// raceEnabled tells a test whether the race detector is on. The
// orchestrator's real-time tests that `make race` runs under the detector
// (trials, faults and actors at once) run only there: without it they
// would repeat the same trials and check nothing more.
const raceEnabled = true
