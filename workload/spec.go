package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/internal/yamlfile"
	"github.com/qmlsab/qmlsab/store"
	"go.yaml.in/yaml/v3"
)

// Spec is a workload parsed once: a name, the kind of workload it is, and
// that kind's settings (the kind's defaults with the file's overrides).
type Spec struct {
	Name        string             `yaml:"name" json:"name"`
	Kind        string             `yaml:"kind" json:"kind"`
	Description string             `yaml:"description,omitempty" json:"description,omitempty"`
	SpillToDisk *SpillToDisk       `yaml:"spill_to_disk,omitempty" json:"spill_to_disk,omitempty"`
	Merge       *MergePartialWrite `yaml:"merge_partial_write,omitempty" json:"merge_partial_write,omitempty"`
}

// Kinds of workload, registered by name.
const (
	KindSpillToDisk       = "spill_to_disk"
	KindMergePartialWrite = "merge_partial_write"
)

// kind is a registered workload kind: its description and defaults.
type kind struct {
	description string
	defaults    func() Spec
}

var kinds = map[string]kind{
	KindSpillToDisk: {
		description: "the sweeper investigation's storm: open-loop aggregations with allowDiskUse (mostly $setWindowFields) in warmup → storm → recovery, canaries throughout",
		defaults: func() Spec {
			w := DefaultSpillToDisk()
			return Spec{Name: KindSpillToDisk, Kind: KindSpillToDisk, SpillToDisk: &w}
		},
	},
	KindMergePartialWrite: {
		description: "the partial-write investigation's hole: $merge pipelines on the primary and on secondaries, shed after their first write batch; counts the documents a failed op left behind",
		defaults: func() Spec {
			w := DefaultMergePartialWrite()
			return Spec{Name: KindMergePartialWrite, Kind: KindMergePartialWrite, Merge: &w}
		},
	},
}

// Builtin is the built-in workload of that name; the built-ins are the
// registered kinds with their defaults.
func Builtin(name string) (Spec, bool) {
	k, ok := kinds[name]
	if !ok {
		return Spec{}, false
	}
	s := k.defaults()
	s.Description = k.description
	return s, true
}

// Names are the built-in workloads, sorted.
func Names() []string {
	var out []string
	for n := range kinds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Duration is the workload's length in model or wall time (0 when it is
// a fixed number of operations).
func (s Spec) Duration() time.Duration {
	if s.SpillToDisk != nil {
		return s.SpillToDisk.Phases.Total()
	}
	return 0
}

// Scaled is the workload with its phases scaled by f (the --profile).
func (s Spec) Scaled(f float64) Spec {
	if s.SpillToDisk != nil {
		w := *s.SpillToDisk
		w.Phases = Phases{
			Warmup:   time.Duration(float64(w.Phases.Warmup) * f),
			Storm:    time.Duration(float64(w.Phases.Storm) * f),
			Recovery: time.Duration(float64(w.Phases.Recovery) * f),
		}
		s.SpillToDisk = &w
	}
	return s
}

// FieldError is a bad value of one key of a spec; Path is the key's path
// in the YAML document (spill_to_disk, stormRate).
type FieldError struct {
	Path []string
	Msg  string
}

func (e *FieldError) Error() string { return strings.Join(e.Path, ".") + ": " + e.Msg }

func fieldErr(msg string, path ...string) error { return &FieldError{Path: path, Msg: msg} }

// Bounds of a workload's values: what MongoDB allows (a document is at
// most 16 MiB) and what a trial can run in bounded memory and time. Each
// bound holds alone; together, a trial's memory (SpillToDisk.TrialBytes
// for a virtual trial, MergePartialWrite.TrialBytes for a merge trial and
// the deployment it writes to) must also stay under MaxTrialHeapBytes,
// which Validate checks.
const (
	MaxDocBytes    = 16 << 20 // BSON's document size limit
	MaxStormRate   = 1000     // storm queries per second
	MaxStormOps    = 300_000  // storm queries per trial (rate × storm length)
	MaxCanaryRate  = 1000     // canaries per second
	MaxTrialLength = 2 * time.Hour
	MaxScanDocs    = 1_000_000_000
	MaxBufferBytes = 1 << 40 // holdBytes, loadBytes: far beyond any host's memory
	MaxSpread      = 2.0     // σ of the log-normal size spreads
	MaxBatchDocs   = 10_000_000
	MaxMergeOps    = 10_000
	// MaxPoolSize bounds maxPoolSize and maxConnecting: the virtual
	// client keeps counts, not connections, so it only refuses nonsense.
	MaxPoolSize   = 1_000_000
	MaxSourceDocs = 1_000_000
	// MaxTrialHeapBytes is a trial's memory budget: a workload whose
	// TrialBytes exceed it is refused, and a run of P trials at once needs
	// at most P times it.
	MaxTrialHeapBytes = 1 << 30
)

func inRange[T int | int64 | float64](v, lo, hi T, path ...string) error {
	if float64(v) != float64(v) || v < lo || v > hi { // NaN fails too
		return fieldErr(fmt.Sprintf("%v is outside [%v, %v]", v, lo, hi), path...)
	}
	return nil
}

func sizeRange(v units.Size, lo, hi int64, path ...string) error {
	if v.Bytes() < lo || v.Bytes() > hi {
		return fieldErr(fmt.Sprintf("%v is outside [%v, %v]", v, units.FormatSize(lo), units.FormatSize(hi)), path...)
	}
	return nil
}

func durRange(v, lo, hi time.Duration, path ...string) error {
	if v < lo || v > hi {
		return fieldErr(fmt.Sprintf("%v is outside [%v, %v]", v, lo, hi), path...)
	}
	return nil
}

// Validate checks a spec's settings against the bounds above; a
// *FieldError names the key.
func (s Spec) Validate() error {
	switch s.Kind {
	case KindSpillToDisk:
		w := s.SpillToDisk
		if w == nil {
			return fieldErr("missing settings", KindSpillToDisk)
		}
		k := KindSpillToDisk
		ph := w.Phases
		for _, err := range []error{
			inRange(w.StormRate, 0.001, MaxStormRate, k, "stormRate"),
			inRange(w.CanaryRate, 0.001, MaxCanaryRate, k, "canaryRate"),
			durRange(ph.Warmup, 0, MaxTrialLength, k, "phases", "warmup"),
			durRange(ph.Storm, time.Millisecond, MaxTrialLength, k, "phases", "storm"),
			durRange(ph.Recovery, 0, MaxTrialLength, k, "phases", "recovery"),
			durRange(ph.Total(), 0, MaxTrialLength, k, "phases"),
			inRange(w.StormRate*ph.Storm.Seconds(), 0, MaxStormOps, k, "stormRate"),
			inRange(w.ScanDocs, 1, MaxScanDocs, k, "scanDocs"),
			inRange(w.ScanSpread, 0, MaxSpread, k, "scanSpread"),
			sizeRange(w.DocBytes, 1, MaxDocBytes, k, "docBytes"),
			sizeRange(w.HoldBytes, 0, MaxBufferBytes, k, "holdBytes"),
			sizeRange(w.LoadBytes, 0, MaxBufferBytes, k, "loadBytes"),
			inRange(w.LoadSpread, 0, MaxSpread, k, "loadSpread"),
			inRange(w.BatchDocs, 1, MaxBatchDocs, k, "batchDocs"),
			inRange(w.OutputShare, 0, 1, k, "outputShare"),
			durRange(w.CanarySLO, time.Millisecond, time.Hour, k, "canarySLO"),
			durRange(w.ServerSelectionTimeout, time.Millisecond, time.Hour, k, "serverSelectionTimeout"),
			inRange(w.MaxPoolSize, 0, MaxPoolSize, k, "maxPoolSize"),
			inRange(w.MaxConnecting, 1, MaxPoolSize, k, "maxConnecting"),
			durRange(w.Timeout, 0, time.Hour, k, "timeout"),
		} {
			if err != nil {
				if fe := err.(*FieldError); fe.Path[len(fe.Path)-1] == "stormRate" && w.StormRate <= MaxStormRate && w.StormRate > 0 {
					fe.Msg = fmt.Sprintf("%v queries/s over a %v storm is %.0f queries; at most %d per trial", w.StormRate, ph.Storm, w.StormRate*ph.Storm.Seconds(), MaxStormOps)
				}
				return err
			}
		}
		if err := w.checkTrialBytes(); err != nil {
			return err
		}
		if w.AppName == "" || w.CanaryAppName == "" || w.AppName == w.CanaryAppName {
			return fieldErr("appName and canaryAppName must be set and differ (the killOp actor tells them apart)", k, "appName")
		}
		if len(w.Mix) == 0 {
			return fieldErr("at least one stage", k, "mix")
		}
		for i, m := range w.Mix {
			if !slices.Contains([]string{"$setWindowFields", "$sort", "$group"}, m.Stage) || !(m.Weight > 0) || math.IsInf(m.Weight, 0) {
				return fieldErr(fmt.Sprintf("stage %q weight %v: want $setWindowFields, $sort or $group with a positive weight", m.Stage, m.Weight), k, "mix", strconv.Itoa(i))
			}
		}
	case KindMergePartialWrite:
		w := s.Merge
		if w == nil {
			return fieldErr("missing settings", KindMergePartialWrite)
		}
		k := KindMergePartialWrite
		for _, err := range []error{
			inRange(w.Ops, 1, MaxMergeOps, k, "ops"),
			inRange(w.SourceDocs, 1, MaxSourceDocs, k, "sourceDocs"),
			inRange(w.ShedAfter, 0, MaxSourceDocs, k, "shedAfterBatches"),
			inRange(w.PressurePercent, 0, 100, k, "pressurePercent"),
		} {
			if err != nil {
				return err
			}
		}
		if err := w.checkTrialBytes(); err != nil {
			return err
		}
	default:
		return fieldErr(fmt.Sprintf("%q: want one of %v", s.Kind, Names()), "kind")
	}
	return nil
}

// LoadFile reads a workload file.
func LoadFile(path string) (Spec, error) {
	b, err := store.ReadFileCapped(path, store.MaxSpecFileBytes)
	if err != nil {
		return Spec{}, fmt.Errorf("reading workload file: %w", err)
	}
	return Parse(path, b)
}

// Parse reads a workload document: name, kind, and optionally the kind's
// settings, which override its defaults. Unknown keys, wrong types and
// values out of bounds are errors naming the file and the key's line.
func Parse(file string, data []byte) (Spec, error) {
	var head struct {
		Kind string `yaml:"kind"`
	}
	root, err := yamlfile.ParseDocument(file, data)
	if err != nil {
		return Spec{}, err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return Spec{}, yamlfile.Errorf(file, 1, "want a mapping with name and kind")
	}
	_ = root.Content[0].Decode(&head)
	spec, ok := Builtin(head.Kind)
	if !ok {
		return Spec{}, yamlfile.Errorf(file, yamlfile.Line(root.Content[0], "kind"), "kind %q: want one of %v", head.Kind, Names())
	}
	spec.Name, spec.Description = "", ""
	doc, err := yamlfile.DecodeStrict(file, data, &spec)
	if err != nil {
		return Spec{}, err
	}
	if spec.Name == "" {
		return Spec{}, yamlfile.Errorf(file, 1, "missing name")
	}
	if (spec.Kind == KindSpillToDisk && spec.Merge != nil) || (spec.Kind == KindMergePartialWrite && spec.SpillToDisk != nil) {
		return Spec{}, yamlfile.Errorf(file, 1, "settings of another kind in a %s workload", spec.Kind)
	}
	if err := spec.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Spec{}, yamlfile.Errorf(file, yamlfile.Line(doc, fe.Path...), "%v", err)
		}
		return Spec{}, yamlfile.Errorf(file, 1, "%v", err)
	}
	return spec, nil
}

// Marshal writes a spec as YAML, durations as "30s" (yaml.v3 would write
// nanoseconds), so that Parse reads it back.
func Marshal(s Spec) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(node(reflect.ValueOf(s))); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var durationType = reflect.TypeFor[time.Duration]()

// node builds the YAML node of a value, following yaml tags, writing
// time.Duration as its string. Hand-written because yaml.v3 has no hook
// for how a foreign type is encoded.
func node(v reflect.Value) *yaml.Node {
	switch {
	case v.Type() == durationType:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: time.Duration(v.Int()).String()}
	case v.Kind() == reflect.Pointer:
		return node(v.Elem())
	case v.Kind() == reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			tag := f.Tag.Get("yaml")
			name, omitEmpty := tag, false
			if j := bytes.IndexByte([]byte(tag), ','); j >= 0 {
				name, omitEmpty = tag[:j], tag[j+1:] == "omitempty"
			}
			if name == "" || name == "-" || (omitEmpty && v.Field(i).IsZero()) {
				continue
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, node(v.Field(i)))
		}
		return n
	case v.Kind() == reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			n.Content = append(n.Content, node(v.Index(i)))
		}
		return n
	}
	var n yaml.Node
	_ = n.Encode(v.Interface())
	return &n
}
