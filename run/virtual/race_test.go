//go:build race

package virtual

// raceEnabled lets a test whose subject is computation in one goroutine
// skip under the race detector, where it takes several times longer and
// exercises no concurrency that other tests of the package do not.
const raceEnabled = true
