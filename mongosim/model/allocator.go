package model

import "time"

// allocator is the part of tcmalloc that makes RSS differ from memory in
// use: pages freed by the application stay mapped (in the page heap and
// the per-CPU caches) and resident until the background thread releases
// them to the OS at releaseRate bytes per second, or until new allocations
// reuse them. RSS therefore rises with use at once and falls no faster
// than the release rate.
type allocator struct {
	releaseRate float64 // bytes per second
	perTick     float64 // releaseRate × a tick's seconds, once (update runs every tick)
	held        float64 // free bytes still resident
	last        int64   // memory in use at the previous update
	started     bool
}

// update takes memory in use now and returns resident bytes after dt.
func (a *allocator) update(inUse int64, dt time.Duration) int64 {
	if !a.started {
		a.started, a.last = true, inUse
	}
	if d := float64(inUse - a.last); d < 0 {
		a.held -= d // freed: stays resident
	} else {
		a.held = max(0, a.held-d) // reuse free pages before asking the OS
	}
	a.last = inUse
	release := a.perTick
	if dt != Tick {
		release = a.releaseRate * dt.Seconds()
	}
	a.held = max(0, a.held-release)
	return inUse + int64(a.held)
}
