// Package workload describes qmlsab's workloads. A workload is parsed once
// into a spec; drivers (the wire driver of `qmlsab run`, mongosim's
// calibration) run the spec.
package workload

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/qmlsab/qmlsab/internal/queryshape"
	"github.com/qmlsab/qmlsab/internal/units"
)

// Phases are a trial's phases: canaries run through all three, the storm
// only in the middle one.
// In JSON (a run's manifest) they are seconds (encoding.go).
type Phases struct {
	Warmup   time.Duration `yaml:"warmup" json:"warmup_s"`
	Storm    time.Duration `yaml:"storm" json:"storm_s"`
	Recovery time.Duration `yaml:"recovery" json:"recovery_s"`
}

// Total is the trial's length.
func (p Phases) Total() time.Duration { return p.Warmup + p.Storm + p.Recovery }

// StageShare is one pipeline kind of the storm and its share of queries.
type StageShare struct {
	Stage  string  `yaml:"stage" json:"stage"`
	Weight float64 `yaml:"weight" json:"weight"`
}

// SpillToDisk is the sweeper investigation's storm: an open-loop arrival of aggregations
// with allowDiskUse, mostly $setWindowFields, whose blocking stages fill
// their buffers, spill, and keep a buffer while their getMores drain them.
//
// Its YAML keys are camelCase (workload files); its JSON keys (the
// manifest's resolved workload) are snake_case, durations in seconds.
type SpillToDisk struct {
	AppName       string       `yaml:"appName" json:"app_name"`
	CanaryAppName string       `yaml:"canaryAppName" json:"canary_app_name"`
	Phases        Phases       `yaml:"phases" json:"phases"`
	StormRate     float64      `yaml:"stormRate" json:"storm_rate"` // queries per second, Poisson arrivals
	Mix           []StageShare `yaml:"mix" json:"mix"`
	ScanDocs      int64        `yaml:"scanDocs" json:"scan_docs"` // median documents a query scans (modelled)
	ScanSpread    float64      `yaml:"scanSpread" json:"scan_spread"`
	// Sizes read 8MiB or plain bytes (internal/units); JSON keeps bytes.
	DocBytes    units.Size    `yaml:"docBytes" json:"doc_bytes"`
	HoldBytes   units.Size    `yaml:"holdBytes" json:"hold_bytes"` // what an idle cursor keeps (merge buffers)
	LoadBytes   units.Size    `yaml:"loadBytes" json:"load_bytes"` // median buffer a getMore loads (window partition)
	LoadSpread  float64       `yaml:"loadSpread" json:"load_spread"`
	BatchDocs   int64         `yaml:"batchDocs" json:"batch_docs"`     // getMore batchSize
	OutputShare float64       `yaml:"outputShare" json:"output_share"` // share of scanned documents the pipeline returns
	CanaryRate  float64       `yaml:"canaryRate" json:"canary_rate"`   // canaries per second (reads and writes alternate)
	CanarySLO   time.Duration `yaml:"canarySLO" json:"canary_slo_s"`
	// The client's settings, the Go driver's options of the same names,
	// the same on both clocks (the wall storm's driver is configured with
	// them; the virtual engine's client obeys them, docs/model.md "The
	// client"). Each client — the storm's, the canaries' — has its own
	// connection pool to each member.
	//
	// ServerSelectionTimeout is how long an operation waits for a primary
	// and then for a connection to it (the driver bounds both waits by it).
	ServerSelectionTimeout time.Duration `yaml:"serverSelectionTimeout" json:"server_selection_timeout_s"`
	// MaxPoolSize is how many connections a client keeps to one member at
	// most (0: no limit): an operation that finds every one busy waits
	// for one, first come first served.
	MaxPoolSize int `yaml:"maxPoolSize" json:"max_pool_size"`
	// MaxConnecting is how many connections to one member a client
	// establishes at once: a pool (empty when its member becomes primary)
	// grows this many connections at a time.
	MaxConnecting int `yaml:"maxConnecting" json:"max_connecting"`
	// Timeout is the driver's timeoutMS for the storm's operations: each
	// one (the aggregate, each getMore) fails with a timeout this long
	// after it starts, whether it waits for a primary, for a connection
	// or for the server's reply. 0 (the default): no limit, as the storm
	// always ran; an operation still unanswered when the trial ends (on
	// the wall clock, after a 10 s drain) is unfinished.
	Timeout time.Duration `yaml:"timeout" json:"timeout_s"`
}

// Client defaults: the Go driver's (maxPoolSize 100, maxConnecting 2,
// serverSelectionTimeoutMS 30 s, no timeoutMS).
const (
	DefaultMaxPoolSize            = 100
	DefaultMaxConnecting          = 2
	DefaultServerSelectionTimeout = 30 * time.Second
)

// FittedMaxPoolSize is the storm's connections per member at the joint
// fit's point: its range runs from one driver's default pool (100) to a
// fleet of clients (5000).
const FittedMaxPoolSize = 500

// CanaryTimeout is how long a canary may take before its client gives up
// on it (a timeout): five times the SLO, and at least 5 s.
func (w SpillToDisk) CanaryTimeout() time.Duration { return max(5*w.CanarySLO, 5*time.Second) }

// DefaultSpillToDisk is the built-in storm at the joint fit's nearest
// point to the sweeper investigation (qmlsab calibrate --fit under
// conserved spill I/O, rounded to two figures; docs/model.md gives each
// range, and docs/investigations.md what the point misses): 207
// queries/s, 60 % $setWindowFields, each query scanning ~10,800 documents
// of ~5 KB (~54 MB, so it spills past the fitted sort limit) and its
// getMore loading a ~16 MiB partition, from clients holding up to 500
// connections to a member (a fleet of clients, not one driver's 100).
func DefaultSpillToDisk() SpillToDisk {
	return SpillToDisk{
		AppName:       "qmlsab-storm",
		CanaryAppName: "qmlsab-canary",
		Phases:        Phases{Warmup: 30 * time.Second, Storm: 150 * time.Second, Recovery: 60 * time.Second},
		StormRate:     207,
		Mix:           []StageShare{{"$setWindowFields", 0.6}, {"$sort", 0.2}, {"$group", 0.2}},
		ScanDocs:      10_800,
		ScanSpread:    0.3,
		DocBytes:      5000,
		HoldBytes:     units.Size(8 * units.MiB),
		LoadBytes:     units.Size(16 * units.MiB),
		LoadSpread:    0.3,
		BatchDocs:     4_000,
		OutputShare:   0.05,
		CanaryRate:    20,
		CanarySLO:     time.Second,

		ServerSelectionTimeout: DefaultServerSelectionTimeout,
		MaxPoolSize:            FittedMaxPoolSize,
		MaxConnecting:          DefaultMaxConnecting,
	}
}

// Query draws one storm query's shape.
func (w SpillToDisk) Query(rng *rand.Rand) queryshape.Shape {
	stage := w.Mix[len(w.Mix)-1].Stage
	total := 0.0
	for _, m := range w.Mix {
		total += m.Weight
	}
	x := rng.Float64() * total
	for _, m := range w.Mix {
		if x < m.Weight {
			stage = m.Stage
			break
		}
		x -= m.Weight
	}
	scan := int64(float64(w.ScanDocs) * math.Exp(w.ScanSpread*rng.NormFloat64()))
	load := int64(float64(w.LoadBytes.Bytes()) * math.Exp(w.LoadSpread*rng.NormFloat64()))
	if stage != "$setWindowFields" {
		load = 0 // a merge of sorted runs or a group table needs no partition
	}
	out := int64(float64(scan*w.DocBytes.Bytes()) * w.OutputShare)
	return queryshape.Shape{Stage: stage, ScanDocs: scan, DocBytes: w.DocBytes.Bytes(), HoldBytes: w.HoldBytes.Bytes(), LoadBytes: load, OutputBytes: out, BatchDocs: w.BatchDocs}
}
