package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/internal/zero"
)

// Hardware describes one member's machine. Defaults are an Atlas M50.
type Hardware struct {
	CPUs int `json:"cpus"`
	// MemLimitBytes is the machine's memory (MemTotal, or the cgroup's
	// limit): what mongod reads as its memory limit, and what the kernel's
	// OOM killer weighs the host's unreclaimable memory against.
	MemLimitBytes int64 `json:"mem_limit_bytes"`
	// AllocOverhead multiplies tracked bytes into the resident bytes the
	// allocator needs for them (fragmentation).
	AllocOverhead float64 `json:"alloc_overhead"`
	// DiskBytesPerSec is the spill disk's bandwidth, shared by the page
	// cache's writeback and every read of a spilled run that misses the
	// page cache.
	DiskBytesPerSec float64 `json:"disk_bytes_per_sec"`
	// SpillBlockBytes is what one spill-read iteration reads; a yield can
	// only happen between iterations, so a read slice lasts at least one
	// block.
	SpillBlockBytes int64 `json:"spill_block_bytes"`
	// SpillWriteBytesPerSec is how fast one CPU serialises a spilled run
	// into the page cache (the write dirties pages; the disk sees them
	// only when the page cache writes them back).
	SpillWriteBytesPerSec float64 `json:"spill_write_bytes_per_sec"`
	// SpillReadBytesPerSec is how fast one CPU reads a spilled run back
	// from pages the page cache still holds (copy and deserialise); the
	// part of a run the page cache evicted is read from the disk.
	SpillReadBytesPerSec float64 `json:"spill_read_bytes_per_sec"`
	// Host is the machine around mongod (host.go): the OOM killer on host
	// memory, the WiredTiger cache, the allocator, untracked memory and
	// the page cache's memory. Nil takes DefaultHostFor(MemLimitBytes).
	Host *Host `json:"host,omitempty"`
}

// DefaultHardware is an Atlas M50: 8 vCPUs, 32 GiB and a gp3 volume,
// with its host (DefaultHost).
func DefaultHardware() Hardware {
	h := DefaultHost()
	return Hardware{
		CPUs:            8,
		MemLimitBytes:   32 << 30,
		AllocOverhead:   1.1,
		DiskBytesPerSec: 125 << 20, // gp3 baseline throughput
		SpillBlockBytes: 1 << 20, SpillWriteBytesPerSec: 2e9, SpillReadBytesPerSec: 2e9,
		Host: &h,
	}
}

// WithDefaults fills every zero field with DefaultHardware's value, so a
// zero Hardware is the documented M50; a machine with other memory gets
// an M50's host in proportion to its memory (DefaultHostFor).
func (h Hardware) WithDefaults() Hardware {
	d := DefaultHardware()
	zero.Default(&h.CPUs, d.CPUs)
	zero.Default(&h.MemLimitBytes, d.MemLimitBytes)
	zero.Default(&h.AllocOverhead, d.AllocOverhead)
	zero.Default(&h.DiskBytesPerSec, d.DiskBytesPerSec)
	zero.Default(&h.SpillBlockBytes, d.SpillBlockBytes)
	zero.Default(&h.SpillWriteBytesPerSec, d.SpillWriteBytesPerSec)
	zero.Default(&h.SpillReadBytesPerSec, d.SpillReadBytesPerSec)
	if h.Host == nil {
		host := DefaultHostFor(h.MemLimitBytes)
		h.Host = &host
	}
	return h
}

// Params are the server parameters the model obeys, by mongod's names.
type Params struct {
	// Execution control (master).
	ProbeInterval             time.Duration // throughputProbingConcurrencyAdjustmentIntervalMillis
	ProbeStep                 float64       // throughputProbingStepMultiple
	MinConcurrency            int           // throughputProbingMinConcurrency (per pool)
	MaxConcurrency            int           // throughputProbingMaxConcurrency (per pool)
	InitialConcurrency        int           // throughputProbingInitialConcurrency (total over both pools; 0: 2 × logical cores)
	EMAWeight                 float64       // throughputProbingConcurrencyMovingAverageWeight
	ReadWriteRatio            float64       // throughputProbingReadWriteRatio
	DeprioritizationGate      bool          // executionControlDeprioritizationGate
	HeuristicDeprioritization bool          // executionControlHeuristicDeprioritization
	DeprioritizeThreshold     int           // executionControlHeuristicNumAdmissionsDeprioritizeThreshold
	LowPriorityTickets        int           // executionControlConcurrentReadLowPriorityTransactions (-1 = CPUs)

	// Query execution.
	YieldPeriod       time.Duration // internalQueryExecYieldPeriodMS
	YieldIterations   int64         // internalQueryExecYieldIterations
	SortMemoryBytes   int64         // internalQueryMaxBlockingSortMemoryUsageBytes
	GroupMemoryBytes  int64         // internalDocumentSourceGroupMaxMemoryBytes
	WindowMemoryBytes int64         // internalDocumentSourceSetWindowFieldsMaxMemoryBytes

	// Query memory load shedding.
	ShedLowPercent     float64       // queryMemoryLoadSheddingLowMarkPercent (-1 = off)
	ShedHighPercent    float64       // queryMemoryLoadSheddingHighMarkPercent
	ShedSizeReference  int64         // queryMemoryLoadSheddingSizeReferenceBytes
	RSSMonitorInterval time.Duration // queryMemoryRssMonitorIntervalMillis
	SweepQueuedOps     bool          // queryMemoryLoadSheddingSweepQueuedOps (the sweeper investigation's fix)
	WriteStartedLatch  bool          // queryMemoryLoadSheddingWriteStartedLatch (the partial-write investigation's fix)

	// GetMoreInheritsPriority (simGetMoreInheritsPriority): the
	// deprioritization heuristic counts a query's admissions across its
	// getMores, so the getMores of a query that has taken 3 tickets run at
	// low priority; each getMore is still a new operation with its own
	// admission count, which orders the low-priority queue. An inference:
	// without it the heuristic would put every batch back at normal
	// priority, and the investigation saw every aggregation waiting in the
	// low-priority queue.
	GetMoreInheritsPriority bool

	// ShedClockScope (simShedClockScope) is where the inline shedder's
	// clock lives: "query" (master: LoadSheddingOpState is a QueryLifespan
	// decoration, so the clock survives getMores) or "operation" (each
	// getMore starts unprimed and its first check above the low mark only
	// primes). A build-variant knob: the stored source states the query
	// scope as a choice; builds before it may have had the other.
	ShedClockScope string

	// ShedHazard (simShedHazard) is the shedder build's hazard form:
	// "odds" (master: ln2 · size · pressure/(1 − pressure), every tracked
	// op shed at the high mark) or "linear" (ln2 · size · pressure: finite
	// at the high mark, no pin). A build-variant unknown: the fit selects
	// the one E's observed flows allow (docs/model.md).
	ShedHazard string
}

// Shedder hazard forms (simShedHazard's values).
const (
	HazardOdds   = "odds"
	HazardLinear = "linear"
)

// DefaultParams are mongod's defaults, from the parameter table.
func DefaultParams() Params {
	var p Params
	for _, s := range ParamSpecs {
		s.assign(&p, s.Default)
	}
	return p
}

// ParamType is a server parameter's type as mongod declares it.
type ParamType string

// Parameter types.
const (
	TypeInt    ParamType = "int"       // a 32-bit integer
	TypeLong   ParamType = "long long" // a 64-bit integer
	TypeDouble ParamType = "double"
	TypeBool   ParamType = "bool"
	TypeString ParamType = "string"
)

// ParamSpec declares one server parameter: its name, type, default,
// bounds, when it may be set, and what it means. Values are typed Go
// values: int64 for TypeInt and TypeLong, float64, bool or string.
type ParamSpec struct {
	Name    string
	Type    ParamType
	Default any
	// Min and Max bound numeric values (inclusive) when HasBounds.
	Min, Max  float64
	HasBounds bool
	// Choices, when set, are a string parameter's only values.
	Choices []string
	// Runtime parameters may be changed with setParameter; the others
	// only at startup (--setParameter).
	Runtime bool
	Doc     string
	// Source is where the name, type and default come from: mongod's
	// parameter declaration (its IDL file), or "model" for a knob of
	// mongosim's own (sim*), which mongod does not have.
	Source string
	// field points at the model's copy (nil: a parameter the model does
	// not read, such as logLevel).
	field func(p *Params) any
	// unit converts a parameter's number into the field's unit.
	unit time.Duration
}

// ParseValue reads a value written as text (an arms file, --setParameter)
// the way mongod parses that type: integers must be whole numbers in range,
// booleans are true/false/1/0.
func (s ParamSpec) ParseValue(text string) (any, error) {
	var v any
	var err error
	switch s.Type {
	case TypeInt:
		v, err = strconv.ParseInt(strings.TrimSpace(text), 10, 32)
	case TypeLong:
		v, err = strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	case TypeDouble:
		v, err = strconv.ParseFloat(strings.TrimSpace(text), 64)
	case TypeBool:
		switch strings.TrimSpace(text) {
		case "true", "1":
			v = true
		case "false", "0":
			v = false
		default:
			err = errors.New("want true, false, 1 or 0")
		}
	default:
		v = text
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = ne.Err
		}
		return nil, fmt.Errorf("parameter %s (%s): bad value %q: %w", s.Name, s.Type, text, err)
	}
	return v, s.check(v)
}

// Coerce converts a value decoded from BSON (setParameter's argument:
// int32, int64, double, bool or string) to the parameter's type, refusing
// what mongod refuses: a fraction for an integer, a number for a string.
func (s ParamSpec) Coerce(v any) (any, error) {
	bad := fmt.Errorf("parameter %s (%s): bad value %v (%T)", s.Name, s.Type, v, v)
	var f float64
	isNum := true
	switch x := v.(type) {
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case float64:
		f = x
	case int:
		f = float64(x)
	default:
		isNum = false
	}
	var out any
	switch s.Type {
	case TypeInt, TypeLong:
		if !isNum || f != math.Trunc(f) || (s.Type == TypeInt && (f < math.MinInt32 || f > math.MaxInt32)) {
			return nil, bad
		}
		out = int64(f)
	case TypeDouble:
		if !isNum {
			return nil, bad
		}
		out = f
	case TypeBool:
		switch b := v.(type) {
		case bool:
			out = b
		default:
			if !isNum {
				return nil, bad
			}
			out = f != 0
		}
	default:
		str, ok := v.(string)
		if !ok {
			return nil, bad
		}
		out = str
	}
	return out, s.check(out)
}

func (s ParamSpec) check(v any) error {
	if str, ok := v.(string); ok && len(s.Choices) > 0 && !slices.Contains(s.Choices, str) {
		return fmt.Errorf("parameter %s: %q is not one of %v", s.Name, str, s.Choices)
	}
	if !s.HasBounds {
		return nil
	}
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return nil
	}
	if f < s.Min || f > s.Max || math.IsNaN(f) {
		return fmt.Errorf("parameter %s (%s): %v is outside [%v, %v]", s.Name, s.Type, v, s.Min, s.Max)
	}
	return nil
}

// FormatValue writes a typed value as text that ParseValue reads back.
func FormatValue(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func intField(f func(*Params) *int) func(*Params) any    { return func(p *Params) any { return f(p) } }
func longField(f func(*Params) *int64) func(*Params) any { return func(p *Params) any { return f(p) } }
func doubleField(f func(*Params) *float64) func(*Params) any {
	return func(p *Params) any { return f(p) }
}
func boolField(f func(*Params) *bool) func(*Params) any { return func(p *Params) any { return f(p) } }
func durField(f func(*Params) *time.Duration) func(*Params) any {
	return func(p *Params) any { return f(p) }
}

// assign stores a typed value in the field a spec points at.
func (s ParamSpec) assign(p *Params, v any) {
	if s.field == nil {
		return
	}
	switch ptr := s.field(p).(type) {
	case *int:
		*ptr = int(v.(int64))
	case *int64:
		*ptr = v.(int64)
	case *float64:
		*ptr = v.(float64)
	case *bool:
		*ptr = v.(bool)
	case *time.Duration:
		*ptr = time.Duration(v.(int64)) * s.unit
	case *string:
		*ptr = v.(string)
	}
}

// ParamSpecs is the one table of server parameters mongosim knows: those
// the model obeys (by mongod's names, types and defaults) and the few
// others clients set. mongosim's setParameter/getParameter, startup
// --setParameter, the virtual engine and `qmlsab arms show` all read it.
var ParamSpecs = func() []ParamSpec {
	ms := time.Millisecond
	type row = ParamSpec
	b := func(r row, lo, hi float64) row { r.Min, r.Max, r.HasBounds = lo, hi, true; return r }
	return []ParamSpec{
		{Name: "logLevel", Source: "mongod server_options (logComponentVerbosity's default level)", Type: TypeInt, Default: int64(0), Runtime: true, Doc: "verbosity of the server log"},
		{Name: "allowDiskUseByDefault", Source: "mongod query_knobs.idl (true since 6.0)", Type: TypeBool, Default: true, Runtime: true, Doc: "blocking stages may spill to disk unless a query says allowDiskUse: false"},
		{Name: "enableTestCommands", Source: "mongod's startup parameter (false); mongosim sets it true at start, as a test server", Type: TypeBool, Default: false, Doc: "failpoints and other test-only commands"},
		b(row{Name: "throughputProbingConcurrencyAdjustmentIntervalMillis", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(100), Runtime: false, unit: ms,
			Doc: "how often throughput probing resizes the ticket pools", field: durField(func(p *Params) *time.Duration { return &p.ProbeInterval })}, 1, math.MaxInt32),
		b(row{Name: "throughputProbingStepMultiple", Source: "mongod execution_control_parameters.idl (master)", Type: TypeDouble, Default: 0.1, Runtime: true,
			Doc: "fraction by which a probe grows or shrinks the pools", field: doubleField(func(p *Params) *float64 { return &p.ProbeStep })}, 0.000001, 0.5),
		b(row{Name: "throughputProbingMinConcurrency", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(4), Runtime: true,
			Doc: "smallest ticket pool probing may set", field: intField(func(p *Params) *int { return &p.MinConcurrency })}, 1, math.MaxInt32),
		b(row{Name: "throughputProbingMaxConcurrency", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(128), Runtime: true,
			Doc: "largest ticket pool probing may set", field: intField(func(p *Params) *int { return &p.MaxConcurrency })}, 1, math.MaxInt32),
		b(row{Name: "throughputProbingInitialConcurrency", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(0), Runtime: false,
			Doc: "tickets at startup over both pools (0: 2 × the logical cores, clamped to [2 × min, 2 × max])", field: intField(func(p *Params) *int { return &p.InitialConcurrency })}, 0, math.MaxInt32),
		b(row{Name: "throughputProbingConcurrencyMovingAverageWeight", Source: "mongod execution_control_parameters.idl (master)", Type: TypeDouble, Default: 0.2, Runtime: true,
			Doc: "weight of the newest throughput in probing's moving average", field: doubleField(func(p *Params) *float64 { return &p.EMAWeight })}, 0.000001, 1),
		b(row{Name: "throughputProbingReadWriteRatio", Source: "mongod execution_control_parameters.idl (master)", Type: TypeDouble, Default: 0.5, Runtime: true,
			Doc: "share of probed tickets given to reads", field: doubleField(func(p *Params) *float64 { return &p.ReadWriteRatio })}, 0, 1),
		{Name: "executionControlDeprioritizationGate", Source: "mongod execution_control_parameters.idl (master)", Type: TypeBool, Default: false, Runtime: true,
			Doc: "low-priority pools are used at all (Atlas sets it on)", field: boolField(func(p *Params) *bool { return &p.DeprioritizationGate })},
		{Name: "executionControlHeuristicDeprioritization", Source: "mongod execution_control_parameters.idl (master)", Type: TypeBool, Default: true, Runtime: true,
			Doc: "operations that took many admissions move to low priority", field: boolField(func(p *Params) *bool { return &p.HeuristicDeprioritization })},
		b(row{Name: "executionControlHeuristicNumAdmissionsDeprioritizeThreshold", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(3), Runtime: true,
			Doc: "admissions after which an operation is deprioritized", field: intField(func(p *Params) *int { return &p.DeprioritizeThreshold })}, 1, math.MaxInt32),
		b(row{Name: "executionControlConcurrentReadLowPriorityTransactions", Source: "mongod execution_control_parameters.idl (master)", Type: TypeInt, Default: int64(-1), Runtime: true,
			Doc: "low-priority read tickets (-1: the number of CPUs)", field: intField(func(p *Params) *int { return &p.LowPriorityTickets })}, -1, math.MaxInt32),
		b(row{Name: "internalQueryExecYieldPeriodMS", Source: "mongod query_knobs.idl", Type: TypeInt, Default: int64(10), Runtime: true, unit: ms,
			Doc: "a running query yields its ticket after this long", field: durField(func(p *Params) *time.Duration { return &p.YieldPeriod })}, 0, math.MaxInt32),
		b(row{Name: "internalQueryExecYieldIterations", Source: "mongod query_knobs.idl", Type: TypeInt, Default: int64(1000), Runtime: true,
			Doc: "a running query yields its ticket after this many work() calls (documents, in the model); 0: never by count", field: longField(func(p *Params) *int64 { return &p.YieldIterations })}, 0, math.MaxInt32),
		b(row{Name: "internalQueryMaxBlockingSortMemoryUsageBytes", Source: "mongod query_knobs.idl (explain output from Atlas clusters shows 32 MiB)", Type: TypeLong, Default: int64(100 << 20), Runtime: true,
			Doc: "$sort memory before it spills", field: longField(func(p *Params) *int64 { return &p.SortMemoryBytes })}, 1, 1<<50),
		b(row{Name: "internalDocumentSourceGroupMaxMemoryBytes", Source: "mongod query_knobs.idl", Type: TypeLong, Default: int64(100 << 20), Runtime: true,
			Doc: "$group memory before it spills", field: longField(func(p *Params) *int64 { return &p.GroupMemoryBytes })}, 1, 1<<50),
		b(row{Name: "internalDocumentSourceSetWindowFieldsMaxMemoryBytes", Source: "mongod query_knobs.idl", Type: TypeLong, Default: int64(100 << 20), Runtime: true,
			Doc: "$setWindowFields memory before it spills", field: longField(func(p *Params) *int64 { return &p.WindowMemoryBytes })}, 1, 1<<50),
		// The query engine's other memory limits (mongosim/query obeys
		// them; the model does not read them).
		b(row{Name: "internalQueryMaxPushBytes", Source: "mongod query_knobs.idl", Type: TypeLong, Default: int64(100 << 20), Runtime: true,
			Doc: "memory of one $push accumulator (it cannot spill: ExceededMemoryLimit beyond)"}, 1, 1<<50),
		b(row{Name: "internalQueryMaxAddToSetBytes", Source: "mongod query_knobs.idl", Type: TypeLong, Default: int64(100 << 20), Runtime: true,
			Doc: "memory of one $addToSet accumulator (it cannot spill: ExceededMemoryLimit beyond)"}, 1, 1<<50),
		b(row{Name: "internalQueryMaxMemoryUsageBytesPerOperation", Source: "mongod query_knobs.idl (master)", Type: TypeLong, Default: int64(1 << 30), Runtime: true,
			Doc: "memory one query holds, spilled data included (mongosim keeps what a stage spills in memory): ExceededMemoryLimit beyond"}, 1, 1<<50),
		b(row{Name: "queryMemoryLoadSheddingLowMarkPercent", Source: "mongod query_memory_load_shedding parameters (master)", Type: TypeDouble, Default: -1.0, Runtime: true,
			Doc: "RSS share of the memory limit where shedding starts (-1: off)", field: doubleField(func(p *Params) *float64 { return &p.ShedLowPercent })}, -1, 100),
		b(row{Name: "queryMemoryLoadSheddingHighMarkPercent", Source: "mongod query_memory_load_shedding parameters (master)", Type: TypeDouble, Default: 85.0, Runtime: true,
			Doc: "RSS share where every tracked operation is shed (must be above the low mark)", field: doubleField(func(p *Params) *float64 { return &p.ShedHighPercent })}, 0, 100),
		b(row{Name: "queryMemoryLoadSheddingSizeReferenceBytes", Source: "mongod query_memory_load_shedding parameters (master)", Type: TypeLong, Default: int64(32 << 20), Runtime: true,
			Doc: "tracked size at which an op's hazard equals the pressure term", field: longField(func(p *Params) *int64 { return &p.ShedSizeReference })}, 1, 1<<30),
		b(row{Name: "queryMemoryRssMonitorIntervalMillis", Source: "mongod query_memory_load_shedding parameters (master)", Type: TypeInt, Default: int64(100), Runtime: false, unit: ms,
			Doc: "how often the shedder samples RSS", field: durField(func(p *Params) *time.Duration { return &p.RSSMonitorInterval })}, 1, math.MaxInt32),
		{Name: "queryMemoryLoadSheddingSweepQueuedOps", Source: "model: the sweeper investigation's proposed fix, not in mongod", Type: TypeBool, Default: false, Runtime: true,
			Doc: "the queued-op sweeper also sheds tracked ops waiting for a ticket (the sweeper fix)", field: boolField(func(p *Params) *bool { return &p.SweepQueuedOps })},
		{Name: "queryMemoryLoadSheddingWriteStartedLatch", Source: "model: the partial-write investigation's proposed fix, not in mongod", Type: TypeBool, Default: false, Runtime: true,
			Doc: "an op that has written is never shed (the write-started fix)", field: boolField(func(p *Params) *bool { return &p.WriteStartedLatch })},
		{Name: "simGetMoreInheritsPriority", Source: "model knob (not in mongod)", Type: TypeBool, Default: true, Runtime: true,
			Doc: "model knob: a query's getMores keep its deprioritization", field: boolField(func(p *Params) *bool { return &p.GetMoreInheritsPriority })},
		// Full-time diagnostic data capture (diagnostic.data), by mongod's
		// names and defaults; a member with a dbpath obeys them.
		{Name: "diagnosticDataCollectionEnabled", Source: "mongod ftdc parameters", Type: TypeBool, Default: true, Runtime: true,
			Doc: "record serverStatus and replSetGetStatus into <dbpath>/diagnostic.data"},
		b(row{Name: "diagnosticDataCollectionPeriodMillis", Source: "mongod ftdc parameters", Type: TypeInt, Default: int64(1000), Runtime: true,
			Doc: "how often diagnostic.data takes a sample"}, 100, 24*60*60*1000),
		b(row{Name: "diagnosticDataCollectionSamplesPerChunk", Source: "mongod ftdc parameters", Type: TypeInt, Default: int64(300), Runtime: false,
			Doc: "samples per compressed diagnostic.data chunk"}, 2, 1<<20),
		b(row{Name: "diagnosticDataCollectionSamplesPerInterimUpdate", Source: "mongod ftdc parameters", Type: TypeInt, Default: int64(10), Runtime: false,
			Doc: "samples between rewrites of metrics.interim"}, 1, 1<<20),
		b(row{Name: "diagnosticDataCollectionFileSizeMB", Source: "mongod ftdc parameters", Type: TypeInt, Default: int64(10), Runtime: false,
			Doc: "size of a diagnostic.data file before the next one starts"}, 1, 1<<20),
		b(row{Name: "diagnosticDataCollectionDirectorySizeMB", Source: "mongod ftdc parameters", Type: TypeInt, Default: int64(500), Runtime: false,
			Doc: "diagnostic.data's size cap: the oldest files are deleted beyond it"}, 10, 1<<30),
		{Name: "simShedClockScope", Source: "model knob (not in mongod)", Type: TypeString, Default: "query", Runtime: true, Choices: []string{"query", "operation"},
			Doc: "build-variant knob: the inline shedder's clock lives with the query (master) or with each operation", field: func(p *Params) any { return &p.ShedClockScope }},
		{Name: "simShedHazard", Source: "model knob (not in mongod)", Type: TypeString, Default: HazardOdds, Runtime: true, Choices: []string{HazardOdds, HazardLinear},
			Doc: "build-variant knob: the shedder's hazard, master's odds form ln2·size·p/(1−p) pinned to 1 at the high mark, or linear ln2·size·p without the pin", field: func(p *Params) any { return &p.ShedHazard }},
	}
}()

// LookupParam finds a parameter's spec by name.
func LookupParam(name string) (ParamSpec, bool) {
	i := slices.IndexFunc(ParamSpecs, func(s ParamSpec) bool { return s.Name == name })
	if i < 0 {
		return ParamSpec{}, false
	}
	return ParamSpecs[i], true
}

// ParamsFrom applies name=value overrides, written as text, to mongod's
// defaults. The overrides are one set, as an arm's setParameters are (a
// map, in no order): every value is parsed for its declared type and
// bounds, then the rules that tie parameters together (throughput
// probing's min <= max, the shedding marks' low < high) are checked once
// on the values the set leaves, as mongosim's startup does with its
// --setParameter values (ParamsOf). A pair that is only consistent
// together, {throughputProbingMaxConcurrency: 2,
// throughputProbingMinConcurrency: 1}, is accepted whatever the order.
func ParamsFrom(overrides map[string]string) (Params, error) {
	values := make(map[string]any, len(overrides))
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		s, ok := LookupParam(name)
		if !ok {
			return Params{}, fmt.Errorf("unknown parameter %s", name)
		}
		v, err := s.ParseValue(overrides[name])
		if err != nil {
			return Params{}, err
		}
		values[name] = v
	}
	return ParamsOf(values)
}

// ParamsOf builds the model's parameters from typed values (a server's
// current parameters).
func ParamsOf(values map[string]any) (Params, error) {
	p := DefaultParams()
	for _, s := range ParamSpecs {
		if v, ok := values[s.Name]; ok {
			s.assign(&p, v)
		}
	}
	return p, p.validate()
}

func (p *Params) validate() error {
	switch {
	case p.MinConcurrency < 1 || p.MaxConcurrency < p.MinConcurrency:
		return fmt.Errorf("throughput probing needs 1 <= throughputProbingMinConcurrency (%d) <= throughputProbingMaxConcurrency (%d)", p.MinConcurrency, p.MaxConcurrency)
	case p.ShedLowPercent >= 0 && p.ShedHighPercent <= p.ShedLowPercent:
		return fmt.Errorf("queryMemoryLoadSheddingHighMarkPercent (%v) must be above the low mark (%v)", p.ShedHighPercent, p.ShedLowPercent)
	}
	return nil
}
