package model

import (
	"fmt"
	"strconv"
	"time"
)

// Hardware describes one member's machine. Defaults are an Atlas M50.
type Hardware struct {
	CPUs int
	// MemLimitBytes is the memory limit: above it the member is OOM-killed.
	MemLimitBytes int64
	// BaselineBytes is resident memory with no query buffers (storage
	// engine cache in use, connections, code).
	BaselineBytes int64
	// AllocOverhead multiplies tracked bytes into resident bytes (allocator
	// fragmentation and untracked per-op memory).
	AllocOverhead float64
	// DiskBytesPerSec is the spill disk's bandwidth, shared by every running
	// operation that reads or writes spill files.
	DiskBytesPerSec float64
	// SpillBlockBytes is what one spill-read iteration reads; a yield can
	// only happen between iterations, so disk-bound slices last at least
	// one block's read.
	SpillBlockBytes int64
	// SpillWriteBytesPerSec is how fast one CPU serialises a spilled run.
	// Spill writes land in the page cache, so they cost CPU, not disk
	// time; reading runs back goes to the device.
	SpillWriteBytesPerSec float64
}

// DefaultHardware is an Atlas M50: 8 vCPUs and 32 GiB.
func DefaultHardware() Hardware {
	return Hardware{
		CPUs:            8,
		MemLimitBytes:   32 << 30,
		BaselineBytes:   6 << 30,
		AllocOverhead:   1.15,
		DiskBytesPerSec: 125 << 20, // gp3 baseline throughput
		SpillBlockBytes: 1 << 20, SpillWriteBytesPerSec: 2e9,
	}
}

// Params are the server parameters the model obeys, by mongod's names.
type Params struct {
	// Execution control (master).
	ProbeInterval             time.Duration // throughputProbingConcurrencyAdjustmentIntervalMillis
	ProbeStep                 float64       // throughputProbingStepMultiple
	MinConcurrency            int           // throughputProbingMinConcurrency (per pool)
	MaxConcurrency            int           // throughputProbingMaxConcurrency (per pool)
	InitialConcurrency        int           // throughputProbingInitialConcurrency (total; 0 = 2 × max, i.e. both pools start full)
	EMAWeight                 float64       // throughputProbingConcurrencyMovingAverageWeight
	ReadWriteRatio            float64       // throughputProbingReadWriteRatio
	DeprioritizationGate      bool          // executionControlDeprioritizationGate
	HeuristicDeprioritization bool          // executionControlHeuristicDeprioritization
	DeprioritizeThreshold     int           // executionControlHeuristicNumAdmissionsDeprioritizeThreshold
	LowPriorityTickets        int           // executionControlConcurrentReadLowPriorityTransactions (-1 = CPUs)

	// Query execution.
	YieldPeriod       time.Duration // internalQueryExecYieldPeriodMS
	YieldIterations   int64         // internalQueryExecYieldIterations (0 in the model: see DefaultParams)
	SortMemoryBytes   int64         // internalQueryMaxBlockingSortMemoryUsageBytes
	GroupMemoryBytes  int64         // internalDocumentSourceGroupMaxMemoryBytes
	WindowMemoryBytes int64         // internalDocumentSourceSetWindowFieldsMaxMemoryBytes

	// Query memory load shedding.
	ShedLowPercent     float64       // queryMemoryLoadSheddingLowMarkPercent (-1 = off)
	ShedHighPercent    float64       // queryMemoryLoadSheddingHighMarkPercent
	ShedSizeReference  int64         // queryMemoryLoadSheddingSizeReferenceBytes
	RSSMonitorInterval time.Duration // queryMemoryRssMonitorIntervalMillis
	SweepQueuedOps     bool          // queryMemoryLoadSheddingSweepQueuedOps (seed 000's fix)
	WriteStartedLatch  bool          // queryMemoryLoadSheddingWriteStartedLatch (seed 003's fix)

	// GetMoreInheritsPriority (simGetMoreInheritsPriority): the
	// deprioritization heuristic counts a query's admissions across its
	// getMores, so the getMores of a query that has taken 3 tickets run at
	// low priority; each getMore is still a new operation with its own
	// admission count, which orders the low-priority queue. An inference:
	// without it the heuristic would put every batch back at normal
	// priority, and the seed saw every aggregation waiting in the
	// low-priority queue.
	GetMoreInheritsPriority bool
}

// DefaultParams are mongod's defaults.
func DefaultParams() Params {
	return Params{
		ProbeInterval: 100 * time.Millisecond, ProbeStep: 0.1, MinConcurrency: 4, MaxConcurrency: 128,
		EMAWeight: 0.2, ReadWriteRatio: 0.5,
		HeuristicDeprioritization: true, DeprioritizeThreshold: 3, LowPriorityTickets: -1,
		// The model yields on the 10 ms period only: its per-document
		// costs stand for batches of work, not the plan's work() calls
		// that mongod's 1000-iteration trigger counts.
		YieldPeriod: 10 * time.Millisecond, YieldIterations: 0,
		SortMemoryBytes: 100 << 20, GroupMemoryBytes: 100 << 20, WindowMemoryBytes: 100 << 20,
		ShedLowPercent: -1, ShedHighPercent: 85, ShedSizeReference: 32 << 20,
		RSSMonitorInterval: 100 * time.Millisecond, GetMoreInheritsPriority: true,
	}
}

// ParamSpec names a server parameter the model reads and its default.
type ParamSpec struct {
	Name    string
	Default string
	set     func(p *Params, v string) error
}

func intParam(f func(*Params) *int) func(*Params, string) error {
	return func(p *Params, v string) error {
		n, err := strconv.Atoi(v)
		*f(p) = n
		return err
	}
}

func int64Param(f func(*Params) *int64) func(*Params, string) error {
	return func(p *Params, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		*f(p) = n
		return err
	}
}

func floatParam(f func(*Params) *float64) func(*Params, string) error {
	return func(p *Params, v string) error {
		n, err := strconv.ParseFloat(v, 64)
		*f(p) = n
		return err
	}
}

func boolParam(f func(*Params) *bool) func(*Params, string) error {
	return func(p *Params, v string) error {
		b, err := strconv.ParseBool(v)
		*f(p) = b
		return err
	}
}

func msParam(f func(*Params) *time.Duration) func(*Params, string) error {
	return func(p *Params, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		*f(p) = time.Duration(n) * time.Millisecond
		return err
	}
}

// ParamSpecs is the table of server parameters the model understands.
var ParamSpecs = []ParamSpec{
	{"throughputProbingConcurrencyAdjustmentIntervalMillis", "100", msParam(func(p *Params) *time.Duration { return &p.ProbeInterval })},
	{"throughputProbingStepMultiple", "0.1", floatParam(func(p *Params) *float64 { return &p.ProbeStep })},
	{"throughputProbingMinConcurrency", "4", intParam(func(p *Params) *int { return &p.MinConcurrency })},
	{"throughputProbingMaxConcurrency", "128", intParam(func(p *Params) *int { return &p.MaxConcurrency })},
	{"throughputProbingInitialConcurrency", "0", intParam(func(p *Params) *int { return &p.InitialConcurrency })},
	{"throughputProbingConcurrencyMovingAverageWeight", "0.2", floatParam(func(p *Params) *float64 { return &p.EMAWeight })},
	{"throughputProbingReadWriteRatio", "0.5", floatParam(func(p *Params) *float64 { return &p.ReadWriteRatio })},
	{"executionControlDeprioritizationGate", "false", boolParam(func(p *Params) *bool { return &p.DeprioritizationGate })},
	{"executionControlHeuristicDeprioritization", "true", boolParam(func(p *Params) *bool { return &p.HeuristicDeprioritization })},
	{"executionControlHeuristicNumAdmissionsDeprioritizeThreshold", "3", intParam(func(p *Params) *int { return &p.DeprioritizeThreshold })},
	{"executionControlConcurrentReadLowPriorityTransactions", "-1", intParam(func(p *Params) *int { return &p.LowPriorityTickets })},
	{"internalQueryExecYieldPeriodMS", "10", msParam(func(p *Params) *time.Duration { return &p.YieldPeriod })},
	{"internalQueryExecYieldIterations", "0", int64Param(func(p *Params) *int64 { return &p.YieldIterations })},
	{"internalQueryMaxBlockingSortMemoryUsageBytes", "104857600", int64Param(func(p *Params) *int64 { return &p.SortMemoryBytes })},
	{"internalDocumentSourceGroupMaxMemoryBytes", "104857600", int64Param(func(p *Params) *int64 { return &p.GroupMemoryBytes })},
	{"internalDocumentSourceSetWindowFieldsMaxMemoryBytes", "104857600", int64Param(func(p *Params) *int64 { return &p.WindowMemoryBytes })},
	{"queryMemoryLoadSheddingLowMarkPercent", "-1", floatParam(func(p *Params) *float64 { return &p.ShedLowPercent })},
	{"queryMemoryLoadSheddingHighMarkPercent", "85", floatParam(func(p *Params) *float64 { return &p.ShedHighPercent })},
	{"queryMemoryLoadSheddingSizeReferenceBytes", "33554432", int64Param(func(p *Params) *int64 { return &p.ShedSizeReference })},
	{"queryMemoryRssMonitorIntervalMillis", "100", msParam(func(p *Params) *time.Duration { return &p.RSSMonitorInterval })},
	{"queryMemoryLoadSheddingSweepQueuedOps", "false", boolParam(func(p *Params) *bool { return &p.SweepQueuedOps })},
	{"queryMemoryLoadSheddingWriteStartedLatch", "false", boolParam(func(p *Params) *bool { return &p.WriteStartedLatch })},
	{"simGetMoreInheritsPriority", "true", boolParam(func(p *Params) *bool { return &p.GetMoreInheritsPriority })},
}

// Set applies one parameter by name.
func (p *Params) Set(name, value string) error {
	for _, s := range ParamSpecs {
		if s.Name == name {
			if err := s.set(p, value); err != nil {
				return fmt.Errorf("parameter %s: bad value %q: %w", name, value, err)
			}
			return p.validate()
		}
	}
	return fmt.Errorf("unknown parameter %s", name)
}

// ParamsFrom applies name=value overrides to mongod's defaults.
func ParamsFrom(overrides map[string]string) (Params, error) {
	p := DefaultParams()
	for k, v := range overrides {
		if err := p.Set(k, v); err != nil {
			return p, err
		}
	}
	return p, p.validate()
}

func (p *Params) validate() error {
	switch {
	case p.MinConcurrency < 1 || p.MaxConcurrency < p.MinConcurrency:
		return fmt.Errorf("throughput probing needs 1 <= min (%d) <= max (%d)", p.MinConcurrency, p.MaxConcurrency)
	case p.ProbeStep <= 0 || p.ProbeStep > 0.5:
		return fmt.Errorf("throughputProbingStepMultiple %v outside (0, 0.5]", p.ProbeStep)
	case p.ShedLowPercent >= 0 && p.ShedHighPercent <= p.ShedLowPercent:
		return fmt.Errorf("queryMemoryLoadSheddingHighMarkPercent (%v) must be above the low mark (%v)", p.ShedHighPercent, p.ShedLowPercent)
	}
	return nil
}
