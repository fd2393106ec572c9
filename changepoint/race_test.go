//go:build race

package changepoint

// raceEnabled lets purely statistical tests skip under the race detector,
// where they take ten times longer and exercise no extra concurrency.
const raceEnabled = true
