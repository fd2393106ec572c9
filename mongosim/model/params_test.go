package model

import (
	"strings"
	"testing"
	"time"
)

// The table's defaults are mongod's: the same values the model ran with
// before the table was typed.
func TestDefaultParamsFromTheTable(t *testing.T) {
	want := Params{
		ProbeInterval: 100 * time.Millisecond, ProbeStep: 0.1, MinConcurrency: 4, MaxConcurrency: 128,
		EMAWeight: 0.2, ReadWriteRatio: 0.5,
		HeuristicDeprioritization: true, DeprioritizeThreshold: 3, LowPriorityTickets: -1,
		YieldPeriod: 10 * time.Millisecond, YieldIterations: 1000,
		SortMemoryBytes: 100 << 20, GroupMemoryBytes: 100 << 20, WindowMemoryBytes: 100 << 20,
		ShedLowPercent: -1, ShedHighPercent: 85, ShedSizeReference: 32 << 20,
		RSSMonitorInterval: 100 * time.Millisecond, GetMoreInheritsPriority: true, ShedClockScope: "query",
		ShedHazard: HazardOdds,
	}
	if got := DefaultParams(); got != want {
		t.Fatalf("DefaultParams() = %+v\nwant %+v", got, want)
	}
}

// Values are parsed by their declared type, as mongod parses them.
func TestParamValuesParsedByType(t *testing.T) {
	cases := []struct {
		name, text string
		ok         bool
		check      func(Params) bool
	}{
		{"queryMemoryLoadSheddingHighMarkPercent", "87.5", true, func(p Params) bool { return p.ShedHighPercent == 87.5 }},
		{"queryMemoryLoadSheddingLowMarkPercent", "30", true, func(p Params) bool { return p.ShedLowPercent == 30 }},
		{"queryMemoryLoadSheddingHighMarkPercent", "101", false, nil},
		{"throughputProbingMinConcurrency", "4.5", false, nil},
		{"throughputProbingMaxConcurrency", "3000000000", false, nil}, // int is 32-bit
		{"internalQueryMaxBlockingSortMemoryUsageBytes", "3000000000", true, func(p Params) bool { return p.SortMemoryBytes == 3e9 }},
		{"queryMemoryLoadSheddingSweepQueuedOps", "1", true, func(p Params) bool { return p.SweepQueuedOps }},
		{"queryMemoryLoadSheddingSweepQueuedOps", "yes", false, nil},
		{"queryMemoryRssMonitorIntervalMillis", "250", true, func(p Params) bool { return p.RSSMonitorInterval == 250*time.Millisecond }},
		{"queryMemoryLoadSheddingSizeReferenceBytes", "2147483648", false, nil}, // at most 1 GiB
		{"simShedClockScope", "operation", true, func(p Params) bool { return p.ShedClockScope == "operation" }},
		{"simShedClockScope", "global", false, nil},
		{"noSuchParameter", "1", false, nil},
	}
	for _, c := range cases {
		p, err := ParamsFrom(map[string]string{c.name: c.text})
		if (err == nil) != c.ok {
			t.Errorf("%s=%s: err %v, want ok=%v", c.name, c.text, err, c.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s=%s: error %q does not name the parameter", c.name, c.text, err)
		}
		if c.ok && !c.check(p) {
			t.Errorf("%s=%s: not applied: %+v", c.name, c.text, p)
		}
	}
	// BSON values: a whole double may set an integer, a fraction may not.
	s, _ := LookupParam("throughputProbingMinConcurrency")
	if v, err := s.Coerce(8.0); err != nil || v != int64(8) {
		t.Errorf("Coerce(8.0) = %v, %v", v, err)
	}
	if _, err := s.Coerce(8.5); err == nil {
		t.Error("Coerce(8.5) of an int parameter accepted")
	}
	h, _ := LookupParam("queryMemoryLoadSheddingHighMarkPercent")
	if v, err := h.Coerce(int32(90)); err != nil || v != 90.0 {
		t.Errorf("Coerce(int32 90) of a double = %v, %v", v, err)
	}
	// The marks are checked together.
	if _, err := ParamsFrom(map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "80", "queryMemoryLoadSheddingHighMarkPercent": "70"}); err == nil {
		t.Error("high mark below the low mark accepted")
	}
}

// An arm's parameters are one set: the rules that tie two parameters
// together are checked on the values the whole set leaves, never on a
// value against a default another member of the set overrides. max 2 on
// its own is below the default min (4); with min 1 beside it the set is
// consistent.
func TestParamsFromChecksTheSetOnce(t *testing.T) {
	pair := map[string]string{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "1"}
	p, err := ParamsFrom(pair)
	if err != nil {
		t.Fatalf("ParamsFrom(%v) = %v, want the pair accepted", pair, err)
	}
	if p.MinConcurrency != 1 || p.MaxConcurrency != 2 {
		t.Fatalf("ParamsFrom(%v): min %d, max %d, want 1 and 2", pair, p.MinConcurrency, p.MaxConcurrency)
	}
	marks := map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "90", "queryMemoryLoadSheddingHighMarkPercent": "95"}
	if _, err := ParamsFrom(marks); err != nil {
		t.Fatalf("ParamsFrom(%v) = %v, want the marks accepted (low 90 < high 95)", marks, err)
	}
	for _, bad := range []map[string]string{
		{"throughputProbingMaxConcurrency": "2"}, // the default min, 4, stays
		{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "3"},
	} {
		_, err := ParamsFrom(bad)
		if err == nil {
			t.Errorf("ParamsFrom(%v) accepted min > max", bad)
			continue
		}
		for _, name := range []string{"throughputProbingMinConcurrency", "throughputProbingMaxConcurrency"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("ParamsFrom(%v) = %q, which does not name %s", bad, err, name)
			}
		}
	}
}

// TestEveryParameterNamesItsSource checks that the table says, for every
// parameter, where its name and default come from: mongod's declaration,
// or the model (a knob mongod does not have, named sim* or one of the
// investigations' fixes).
func TestEveryParameterNamesItsSource(t *testing.T) {
	for _, s := range ParamSpecs {
		switch {
		case s.Source == "":
			t.Errorf("%s: no source for its default %v", s.Name, s.Default)
		case strings.HasPrefix(s.Name, "sim") && !strings.HasPrefix(s.Source, "model"):
			t.Errorf("%s is a model knob but its source says %q", s.Name, s.Source)
		}
	}
}

// TestDefaultsAreMongods pins the defaults an audit found the model had
// changed silently: mongod yields every 1000 work() calls, starts its
// pools at 2 × the cores, has test commands off and a 100 MiB sort limit.
func TestDefaultsAreMongods(t *testing.T) {
	p := DefaultParams()
	if p.YieldIterations != 1000 || p.InitialConcurrency != 0 || p.SortMemoryBytes != 100<<20 {
		t.Fatalf("defaults %+v; want mongod's (yield iterations 1000, initial concurrency 0, sort limit 100 MiB)", p)
	}
	if s, _ := LookupParam("enableTestCommands"); s.Default != false {
		t.Fatalf("enableTestCommands defaults to %v; mongod's is false", s.Default)
	}
	n := NewNode(DefaultHardware(), p, 1)
	if r, w := n.Pool(false, false).Total, n.Pool(true, false).Total; r != 8 || w != 8 {
		t.Fatalf("an M50's pools start at %d read + %d write tickets; mongod's rule is 2 × 8 cores over both", r, w)
	}
}
