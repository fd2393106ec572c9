package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"time"

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
		description: "seed 000's storm: open-loop aggregations with allowDiskUse (mostly $setWindowFields) in warmup → storm → recovery, canaries throughout",
		defaults: func() Spec {
			w := DefaultSpillToDisk()
			return Spec{Name: KindSpillToDisk, Kind: KindSpillToDisk, SpillToDisk: &w}
		},
	},
	KindMergePartialWrite: {
		description: "seed 003's hole: $merge pipelines on the primary and on secondaries, shed after their first write batch; counts the documents a failed op left behind",
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

// Validate checks a spec's settings; messages name the YAML key.
func (s Spec) Validate() error {
	switch s.Kind {
	case KindSpillToDisk:
		w := s.SpillToDisk
		switch {
		case w == nil:
			return errors.New("spill_to_disk: missing settings")
		case w.StormRate <= 0:
			return errors.New("spill_to_disk.stormRate: must be positive")
		case w.CanaryRate <= 0:
			return errors.New("spill_to_disk.canaryRate: must be positive")
		case w.Phases.Storm <= 0:
			return errors.New("spill_to_disk.phases.storm: must be positive")
		case w.Phases.Warmup < 0 || w.Phases.Recovery < 0:
			return errors.New("spill_to_disk.phases: warmup and recovery must not be negative")
		case len(w.Mix) == 0:
			return errors.New("spill_to_disk.mix: at least one stage")
		case w.CanarySLO <= 0:
			return errors.New("spill_to_disk.canarySLO: must be positive")
		}
		for _, m := range w.Mix {
			if !slices.Contains([]string{"$setWindowFields", "$sort", "$group"}, m.Stage) || m.Weight <= 0 {
				return fmt.Errorf("spill_to_disk.mix: stage %q weight %v: want $setWindowFields, $sort or $group with a positive weight", m.Stage, m.Weight)
			}
		}
	case KindMergePartialWrite:
		w := s.Merge
		switch {
		case w == nil:
			return errors.New("merge_partial_write: missing settings")
		case w.Ops < 1:
			return errors.New("merge_partial_write.ops: at least 1")
		case w.SourceDocs < 1:
			return errors.New("merge_partial_write.sourceDocs: at least 1")
		case w.ShedAfter < 0:
			return errors.New("merge_partial_write.shedAfterBatches: must not be negative")
		}
	default:
		return fmt.Errorf("kind %q: want one of %v", s.Kind, Names())
	}
	return nil
}

// Error is a problem in a workload file, at a line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// LoadFile reads a workload file.
func LoadFile(path string) (Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("reading workload file: %w", err)
	}
	return Parse(path, b)
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// Parse reads a workload document: name, kind, and optionally the kind's
// settings, which override its defaults. Unknown keys and wrong types are
// errors naming the file and line.
func Parse(file string, data []byte) (Spec, error) {
	var head struct {
		Kind string `yaml:"kind"`
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Spec{}, yamlErr(file, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return Spec{}, &Error{file, 1, "want a mapping with name and kind"}
	}
	_ = root.Content[0].Decode(&head)
	spec, ok := Builtin(head.Kind)
	if !ok {
		return Spec{}, &Error{file, keyLine(root.Content[0], "kind"), fmt.Sprintf("kind %q: want one of %v", head.Kind, Names())}
	}
	spec.Name, spec.Description = "", ""
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil && !errors.Is(err, io.EOF) {
		return Spec{}, yamlErr(file, err)
	}
	if spec.Name == "" {
		return Spec{}, &Error{file, 1, "missing name"}
	}
	if (spec.Kind == KindSpillToDisk && spec.Merge != nil) || (spec.Kind == KindMergePartialWrite && spec.SpillToDisk != nil) {
		return Spec{}, &Error{file, 1, fmt.Sprintf("settings of another kind in a %s workload", spec.Kind)}
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, &Error{file, keyLine(root.Content[0], spec.Kind), err.Error()}
	}
	return spec, nil
}

func yamlErr(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		err = errors.New(te.Errors[0])
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{file, line, m[2]}
	}
	return &Error{file, 1, err.Error()}
}

func keyLine(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
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
