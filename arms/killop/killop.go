// Package killop is the decision of arm D's killOp actor (mongotune-style):
// given the member's resident memory and its current operations, which
// operations to kill. The real actor (which reads serverStatus and
// $currentOp over the wire) and mongosim's calibration both call Decide,
// so the policy exists once.
//
// The sweeper investigation calls D's actor "mongotune-style" and gives no
// rule, so the rule is an unknown: Policies names a few plausible ones,
// and the calibration fit chooses among them by D's observed flows.
package killop

import (
	"slices"
	"strings"
	"time"
)

// Config is the actor's YAML configuration.
type Config struct {
	// RSSHighPercent: act when resident memory is above this share of the
	// memory limit.
	RSSHighPercent float64 `yaml:"rssHighPercent"`
	// Interval between samples.
	Interval time.Duration `yaml:"interval"`
	// AppName limits kills to operations of this application (the
	// workload's own). Empty means AnyApp must be set.
	AppName string `yaml:"appName"`
	// AnyApp allows killing operations of any application.
	AnyApp bool `yaml:"anyApp"`
	// MaxKillsPerRound caps kills per sample (0: 100).
	MaxKillsPerRound int `yaml:"maxKillsPerRound"`
	// Policy is which operations the actor considers, one of Policies
	// ("": PolicyDefault).
	Policy string `yaml:"policy"`
}

// The actor's policies: which in-scope operations it may kill, each time
// largest tracked memory first until the bytes cover RSS's excess over
// the high mark.
const (
	// PolicyLargestFirst considers every in-scope operation, running or
	// queued.
	PolicyLargestFirst = "largest-first"
	// PolicyQueuedLargestFirst considers only operations waiting for a
	// ticket (any priority): a running op is left to finish and free its
	// memory.
	PolicyQueuedLargestFirst = "queued-largest-first"
	// PolicyLowPriorityLargestFirst considers only operations waiting in
	// a low-priority queue: the deprioritized ones, which execution
	// control already judged the heaviest.
	PolicyLowPriorityLargestFirst = "lowpri-queued-largest-first"
)

// Policies are the actor's rules, in the order they are documented.
var Policies = []string{PolicyLargestFirst, PolicyQueuedLargestFirst, PolicyLowPriorityLargestFirst}

// PolicyDefault is arm D's rule when a configuration names none: the one
// the calibration fit selects from D's observed flows (docs/model.md).
const PolicyDefault = PolicyLargestFirst

// Default is arm D's actor.
func Default(appName string) Config {
	return Config{RSSHighPercent: 70, Interval: 100 * time.Millisecond, AppName: appName, MaxKillsPerRound: 100, Policy: PolicyDefault}
}

// ValidPolicy reports whether name is one of Policies (or empty, the
// default).
func ValidPolicy(name string) bool { return name == "" || slices.Contains(Policies, name) }

func (c Config) policy() string {
	if c.Policy == "" {
		return PolicyDefault
	}
	return c.Policy
}

// QueuedOnly reports whether the policy considers only operations waiting
// for a ticket, so a caller may list only those.
func (c Config) QueuedOnly() bool {
	p := c.policy()
	return p == PolicyQueuedLargestFirst || p == PolicyLowPriorityLargestFirst
}

// Considers reports whether the actor's policy lets it consider op at
// all (before scope: InScope).
func (c Config) Considers(op Op) bool {
	switch c.policy() {
	case PolicyQueuedLargestFirst:
		return op.Queued
	case PolicyLowPriorityLargestFirst:
		return op.Queued && op.LowPriority
	}
	return true
}

// Op is what the actor sees of an operation in $currentOp.
type Op struct {
	ID           int64
	AppName      string
	TrackedBytes int64 // inUseTrackedMemBytes
	Queued       bool  // currentQueue is non-null
	LowPriority  bool  // its queue (or ticket) is a lowPriority one
	Stage        string
	// Writes marks operations that took write locks; they are never
	// killed (a kill after a write could leave partial effects).
	Writes bool
}

// InScope reports whether the actor may kill op at all.
func (c Config) InScope(op Op) bool {
	if op.Writes || op.TrackedBytes <= 0 {
		return false
	}
	if c.AnyApp {
		return true
	}
	// Equal names first: the common case, without EqualFold's folding.
	return c.AppName != "" && (op.AppName == c.AppName || strings.EqualFold(op.AppName, c.AppName))
}

func (c Config) high(limitBytes int64) int64 {
	return int64(float64(limitBytes) * c.RSSHighPercent / 100)
}

// KillsPerRound is the most operations one round kills
// (MaxKillsPerRound, or 100 when that is not set): Decide's picks are the
// candidates' largest first, at most this many, so a caller that can list
// candidates largest first need list no more.
func (c Config) KillsPerRound() int {
	if c.MaxKillsPerRound <= 0 {
		return 100
	}
	return c.MaxKillsPerRound
}

// Acts reports whether resident memory is above the actor's high mark, so
// that a caller may skip listing operations when Decide would kill none.
func (c Config) Acts(residentBytes, limitBytes int64) bool { return residentBytes > c.high(limitBytes) }

// Decide returns the operations to kill: when resident memory is above the
// high mark, the in-scope operations the policy considers holding the most
// tracked memory (queued ones included, which is what the in-server inline
// shedder cannot reach), until the bytes they hold cover the excess, at
// least one when there is any candidate.
func Decide(c Config, residentBytes, limitBytes int64, ops []Op) []Op {
	if !c.Acts(residentBytes, limitBytes) {
		return nil
	}
	high := c.high(limitBytes)
	// The candidates' indices as a max-heap by tracked bytes (ties: the
	// lower ID first): the queue can hold thousands of operations and a
	// round kills few, so popping the largest beats sorting them all.
	var cand []int
	for i, op := range ops {
		if c.InScope(op) && c.Considers(op) {
			cand = append(cand, i)
		}
	}
	before := func(a, b int) bool {
		x, y := ops[cand[a]], ops[cand[b]]
		if x.TrackedBytes != y.TrackedBytes {
			return x.TrackedBytes > y.TrackedBytes
		}
		return x.ID < y.ID
	}
	down := func(i, n int) {
		for {
			l := 2*i + 1
			if l >= n {
				return
			}
			m := l
			if r := l + 1; r < n && before(r, l) {
				m = r
			}
			if !before(m, i) {
				return
			}
			cand[i], cand[m] = cand[m], cand[i]
			i = m
		}
	}
	for i := len(cand)/2 - 1; i >= 0; i-- {
		down(i, len(cand))
	}
	limit := c.KillsPerRound()
	excess := residentBytes - high
	var kill []Op
	var freed int64
	for n := len(cand); n > 0; n-- {
		if len(kill) >= limit || (len(kill) > 0 && freed >= excess) {
			break
		}
		op := ops[cand[0]]
		kill = append(kill, op)
		freed += op.TrackedBytes
		cand[0] = cand[n-1]
		down(0, n-1)
	}
	return kill
}
