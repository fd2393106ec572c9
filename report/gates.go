package report

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/qmlsab/qmlsab/internal/yamlfile"
	"github.com/qmlsab/qmlsab/metric"
)

// Gate is a check over an arm's trial metrics: Of (median, mean, min,
// max) of Metric, compared by Op with Value or with the same statistic of
// metric Than.
type Gate struct {
	Name   string  `yaml:"name"`
	Metric string  `yaml:"metric"`
	Of     string  `yaml:"of,omitempty"`
	Op     string  `yaml:"op"`
	Value  float64 `yaml:"value,omitempty"`
	Than   string  `yaml:"than,omitempty"`
	// Why explains the gate in the report.
	Why string `yaml:"why,omitempty"`
}

// GateSet is a named list of gates.
type GateSet struct {
	Name  string `yaml:"name"`
	Gates []Gate `yaml:"gates"`
}

// SweeperAcceptance is the sweeper investigation's acceptance (see
// docs/investigations.md): the arm keeps the server available, never
// fails over, keeps the low-priority queue bounded, and sheds faster than
// the queue admits.
var SweeperAcceptance = GateSet{Name: "sweeper-acceptance", Gates: []Gate{
	{Name: "available", Metric: metric.Availability, Of: "median", Op: ">", Value: 0.9, Why: "canary availability above 0.9"},
	{Name: "no failover", Metric: metric.Failovers, Of: "max", Op: "==", Value: 0, Why: "no trial saw a primary change (counts compared as counts)"},
	{Name: "queue bounded", Metric: metric.LowQueueGrowth, Of: "max", Op: "==", Value: 0, Why: "no trial's low-priority queue grew in the storm (slope test, one-sided p < 0.01, ≥ 10 ops)"},
	{Name: "sheds outpace admissions", Metric: metric.ShedsPerS, Of: "median", Op: ">", Than: metric.AdmissionsPerS, Why: "sheds/s above low-priority admissions/s in the storm"},
}}

// BuiltinGates are the gate sets known by name; seed000 is the name the
// sweeper acceptance had first, kept so that existing jobs keep working.
var BuiltinGates = map[string]GateSet{"sweeper-acceptance": SweeperAcceptance, "seed000": SweeperAcceptance}

// GateResult is a gate evaluated for one arm.
type GateResult struct {
	Gate  Gate
	Arm   string
	Value float64 // the statistic of the metric
	// Threshold is the value compared with (Than's statistic when set).
	Threshold float64
	Pass      bool
	// NoData: the arm has no valid trial with the metric (or with Than's),
	// so the gate can be judged neither way: it does not pass, and it does
	// not fail the gate set either (Analysis.GatesPass); the report says
	// "no data" with Reason and a warning. A metric the server never
	// reported is not a zero that fails a gate.
	NoData bool
	Reason string
}

// Verdict is the gate's result as people read it: pass, FAIL or no data.
func (r GateResult) Verdict() string {
	switch {
	case r.NoData:
		return "no data"
	case r.Pass:
		return "pass"
	}
	return "FAIL"
}

// Detail is what the verdict rests on: "value vs threshold", or why
// there is no data.
func (r GateResult) Detail() string {
	if r.NoData {
		if r.Reason == "" {
			return "no valid trial has " + r.Gate.Metric
		}
		return r.Reason
	}
	return fmt.Sprintf("%s vs %s", Number(r.Value), Number(r.Threshold))
}

// Line is the gate's one-line result: "pass (0.98 vs 0.9)", "FAIL (…)"
// or "no data (the server reported no …)".
func (r GateResult) Line() string { return r.Verdict() + " (" + r.Detail() + ")" }

func statOf(s Summary, of string) float64 {
	switch of {
	case "mean":
		return s.Mean
	case "min":
		return s.Min
	case "max":
		return s.Max
	}
	return s.Median
}

// Evaluate checks a gate against an arm's summaries.
func (g Gate) Evaluate(arm string, sums map[string]Summary) GateResult {
	r := GateResult{Gate: g, Arm: arm}
	s, ok := sums[g.Metric]
	if !ok || s.N == 0 {
		r.NoData = true
		return r
	}
	r.Value, r.Threshold = statOf(s, g.Of), g.Value
	if g.Than != "" {
		t, ok := sums[g.Than]
		if !ok || t.N == 0 {
			r.NoData = true
			return r
		}
		r.Threshold = statOf(t, g.Of)
	}
	switch g.Op {
	case ">":
		r.Pass = r.Value > r.Threshold
	case ">=":
		r.Pass = r.Value >= r.Threshold
	case "<":
		r.Pass = r.Value < r.Threshold
	case "<=":
		r.Pass = r.Value <= r.Threshold
	case "==":
		r.Pass = r.Value == r.Threshold
	}
	return r
}

// String is the gate as a condition: "median availability > 0.9".
func (g Gate) String() string {
	of := g.Of
	if of == "" {
		of = "median"
	}
	rhs := Number(g.Value)
	if g.Than != "" {
		rhs = of + " " + g.Than
	}
	return fmt.Sprintf("%s %s %s %s", of, g.Metric, g.Op, rhs)
}

// LoadGates is a built-in gate set's name or a gate YAML file.
func LoadGates(nameOrFile string) (GateSet, error) {
	if gs, ok := BuiltinGates[nameOrFile]; ok {
		return gs, nil
	}
	b, err := os.ReadFile(nameOrFile)
	if err != nil {
		return GateSet{}, fmt.Errorf("gates %q: not a built-in set (sweeper-acceptance) and not a readable file: %w", nameOrFile, err)
	}
	return ParseGates(nameOrFile, b)
}

// ParseGates reads a gate file strictly; errors name the file and line.
func ParseGates(file string, data []byte) (GateSet, error) {
	var gs GateSet
	root, err := yamlfile.DecodeStrict(file, data, &gs)
	if err != nil {
		return gs, err
	}
	line := func(i int) int { return yamlfile.Line(root, "gates", strconv.Itoa(i)) }
	if gs.Name == "" {
		return gs, fmt.Errorf("%s:1: missing name", file)
	}
	if len(gs.Gates) == 0 {
		return gs, fmt.Errorf("%s:1: no gates", file)
	}
	for i, g := range gs.Gates {
		switch {
		case g.Metric == "":
			return gs, fmt.Errorf("%s:%d: gate without a metric", file, line(i))
		case g.Op != ">" && g.Op != ">=" && g.Op != "<" && g.Op != "<=" && g.Op != "==":
			return gs, fmt.Errorf("%s:%d: op %q: want >, >=, <, <= or ==", file, line(i), g.Op)
		case g.Of != "" && g.Of != "median" && g.Of != "mean" && g.Of != "min" && g.Of != "max":
			return gs, fmt.Errorf("%s:%d: of %q: want median, mean, min or max", file, line(i), g.Of)
		case math.IsNaN(g.Value) || math.IsInf(g.Value, 0):
			return gs, fmt.Errorf("%s:%d: value must be a finite number", file, line(i))
		}
		if g.Name == "" {
			gs.Gates[i].Name = g.Metric + " " + g.Op + " " + strconv.FormatFloat(g.Value, 'g', -1, 64)
		}
	}
	return gs, nil
}
