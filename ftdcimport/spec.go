// Package ftdcimport builds a run folder from what MongoDB members
// recorded about themselves — their diagnostic.data (FTDC) — and a small
// description of which arm each time window was and where its phases
// were, so A/B trials run elsewhere (or whose sampler went blind) are
// reported like qmlsab's own. Samples come through collect's extractor
// table (collect.ReadFTDC), metrics through the metric registry, files
// through the store; client-side outcomes (storm ops, canaries, killOp
// kills) come from an optional file, and the metrics resting on whatever
// is missing are absent, not zero. The formats are in docs/ftdc.md.
package ftdcimport

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/internal/yamlfile"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Spec says which arm each time window of the diagnostic data was. Paths
// are relative to the spec file's folder.
type Spec struct {
	// DiagnosticData are the members' diagnostic.data directories (or
	// FTDC files) of arms that do not list their own.
	DiagnosticData []string `yaml:"diagnosticData"`
	// Workload is what ran: a built-in workload's name or a workload YAML
	// file (default spill_to_disk); the phases below replace its phases.
	Workload string `yaml:"workload"`
	// Phases are every trial's phase lengths unless the trial gives its
	// own.
	Phases Phases `yaml:"phases"`
	// Outcomes is the client-side outcomes file (JSON lines or CSV).
	Outcomes string             `yaml:"outcomes"`
	Arms     map[string]ArmSpec `yaml:"arms"`
	Trials   []TrialSpec        `yaml:"trials"`

	file string
	root *yaml.Node
}

// Phases are a trial's phase lengths: warmup, storm, recovery.
type Phases struct {
	Warmup   time.Duration `yaml:"warmup"`
	Storm    time.Duration `yaml:"storm"`
	Recovery time.Duration `yaml:"recovery"`
}

// Total is the trial's length.
func (p Phases) Total() time.Duration { return p.Warmup + p.Storm + p.Recovery }

// ArmSpec is what the import knows of an arm.
type ArmSpec struct {
	// DiagnosticData are this arm's members' diagnostic data (when each
	// arm ran on its own deployment).
	DiagnosticData []string `yaml:"diagnosticData"`
	// KillOp says the arm ran the killOp actor, whose kills only a client
	// sees (default: what the built-in arm of that name does, else no).
	KillOp *bool `yaml:"killOp"`
	// Build and SetParameters describe the arm in the manifest.
	Build         string            `yaml:"build"`
	SetParameters map[string]string `yaml:"setParameters"`
}

// TrialSpec is one trial: its arm and when it started (RFC 3339).
type TrialSpec struct {
	Arm    string  `yaml:"arm"`
	Start  string  `yaml:"start"`
	Phases *Phases `yaml:"phases"`
	// Until is when the trial's records end (RFC 3339; default: the end
	// of its recovery phase). qmlsab's own trials record until the storm's
	// last operations have returned, which may be later.
	Until string `yaml:"until"`

	start, until time.Time
}

// LoadSpec reads and checks an import spec; problems are errors naming
// the file and line.
func LoadSpec(path string) (*Spec, error) {
	b, err := store.ReadFileCapped(path, store.MaxSpecFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading import spec: %w", err)
	}
	return ParseSpec(path, b)
}

// ParseSpec checks an import spec read from file.
func ParseSpec(file string, data []byte) (*Spec, error) {
	s := &Spec{file: file}
	root, err := yamlfile.DecodeStrict(file, data, s)
	if err != nil {
		return nil, err
	}
	s.root = root
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Spec) errf(path []string, format string, args ...any) error {
	if s.root == nil { // given by flags
		return fmt.Errorf(format, args...)
	}
	return yamlfile.Errorf(s.file, yamlfile.Line(s.root, path...), format, args...)
}

// path resolves a path of the spec against its folder.
func (s *Spec) path(p string) string {
	if filepath.IsAbs(p) || s.root == nil {
		return p
	}
	return filepath.Join(filepath.Dir(s.file), p)
}

func (p Phases) check() string {
	switch {
	case p.Storm <= 0:
		return "phases: storm must be longer than 0"
	case p.Warmup < 0 || p.Recovery < 0:
		return "phases: warmup and recovery must not be negative"
	case p.Total() > workload.MaxTrialLength:
		return fmt.Sprintf("phases: a trial of %v is longer than %v", p.Total(), workload.MaxTrialLength)
	}
	return ""
}

func (s *Spec) check() error {
	if len(s.Trials) == 0 {
		return s.errf([]string{"trials"}, "no trials: list each trial's arm and start")
	}
	for i := range s.Trials {
		tr := &s.Trials[i]
		at := func(k string) []string { return []string{"trials", strconv.Itoa(i), k} }
		if tr.Arm == "" {
			return s.errf(at("arm"), "trial %d has no arm", i+1)
		}
		t, err := time.Parse(time.RFC3339Nano, tr.Start)
		if err != nil {
			return s.errf(at("start"), "trial %d: start %q: want an RFC 3339 time such as 2025-06-01T10:00:00Z", i+1, tr.Start)
		}
		tr.start = t
		if tr.Phases != nil {
			if msg := tr.Phases.check(); msg != "" {
				return s.errf(at("phases"), "trial %d: %s", i+1, msg)
			}
		} else if msg := s.Phases.check(); msg != "" {
			return s.errf([]string{"phases"}, "%s (trial %d has no phases of its own)", msg, i+1)
		}
		tr.until = t.Add(s.phases(*tr).Total())
		if tr.Until != "" {
			u, err := time.Parse(time.RFC3339Nano, tr.Until)
			if err != nil {
				return s.errf(at("until"), "trial %d: until %q: want an RFC 3339 time", i+1, tr.Until)
			}
			if !u.After(t) {
				return s.errf(at("until"), "trial %d: until %s is not after its start %s", i+1, tr.Until, tr.Start)
			}
			tr.until = u
		}
		if len(s.Arms[tr.Arm].DiagnosticData) == 0 && len(s.DiagnosticData) == 0 {
			return s.errf(at("arm"), "trial %d: no diagnosticData for arm %s (give it under arms.%s or at the top)", i+1, tr.Arm, tr.Arm)
		}
	}
	check := func(paths []string, at ...string) error {
		for j, p := range paths {
			if mongouri.HasScheme(p) {
				return s.errf(append(at, strconv.Itoa(j)), "diagnosticData %s: a MongoDB connection string; import reads members' diagnostic.data folders or FTDC files (copy them from the server first)", arms.RedactURI(p))
			}
			if _, err := os.Stat(s.path(p)); err != nil {
				return s.errf(append(at, strconv.Itoa(j)), "diagnosticData %s: %v", p, err)
			}
		}
		return nil
	}
	if err := check(s.DiagnosticData, "diagnosticData"); err != nil {
		return err
	}
	for name, a := range s.Arms {
		if err := check(a.DiagnosticData, "arms", name, "diagnosticData"); err != nil {
			return err
		}
	}
	if mongouri.HasScheme(s.Outcomes) {
		return s.errf([]string{"outcomes"}, "outcomes %s: a MongoDB connection string; want a JSON lines or CSV file", arms.RedactURI(s.Outcomes))
	}
	if s.Outcomes != "" {
		if _, err := os.Stat(s.path(s.Outcomes)); err != nil {
			return s.errf([]string{"outcomes"}, "outcomes %s: %v", s.Outcomes, err)
		}
	}
	if _, err := s.workload(); err != nil {
		return err
	}
	return nil
}

// workload is the spec's workload with its default phases.
func (s *Spec) workload() (workload.Spec, error) {
	name := s.Workload
	if name == "" {
		name = workload.KindSpillToDisk
	}
	w, ok := workload.Builtin(name)
	if !ok {
		var err error
		if w, err = workload.LoadFile(s.path(name)); err != nil {
			return w, s.errf([]string{"workload"}, "workload %s: %v", name, err)
		}
	}
	if w.SpillToDisk == nil {
		return w, s.errf([]string{"workload"}, "workload %s is a %s workload; imports are of spill_to_disk storms", name, w.Kind)
	}
	sd := *w.SpillToDisk
	if s.Phases.Storm > 0 {
		sd.Phases = workload.Phases{Warmup: s.Phases.Warmup, Storm: s.Phases.Storm, Recovery: s.Phases.Recovery}
	}
	w.SpillToDisk = &sd
	return w, nil
}

// sources are the diagnostic data of an arm, resolved.
func (s *Spec) sources(arm string) []string {
	paths := s.Arms[arm].DiagnosticData
	if len(paths) == 0 {
		paths = s.DiagnosticData
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = s.path(p)
	}
	return out
}

// phases are a trial's phases.
func (s *Spec) phases(tr TrialSpec) Phases {
	if tr.Phases != nil {
		return *tr.Phases
	}
	return s.Phases
}

// killOp reports whether an arm ran the killOp actor.
func (s *Spec) killOp(arm string) bool {
	if k := s.Arms[arm].KillOp; k != nil {
		return *k
	}
	if a, ok := arms.Lookup(arm); ok {
		return a.KillOp() != nil
	}
	return false
}

// Fields of FromFlags's and Import's input, as their errors name them
// (internal/field): a command maps each to the flag that gives it.
const (
	FieldArm      = "FromFlags.arm"
	FieldStart    = "FromFlags.start"
	FieldPhases   = "FromFlags.phases"
	FieldOutcomes = "FromFlags.outcomes"
	FieldDir      = "Import.dir"
)

// FromFlags is the spec of one trial given on the command line: its arm,
// start and phases, and the members' diagnostic data.
func FromFlags(arm, start string, phases Phases, outcomes string, sources []string) (*Spec, error) {
	s := &Spec{file: "flags", DiagnosticData: sources, Phases: phases, Outcomes: outcomes,
		Trials: []TrialSpec{{Arm: arm, Start: start}}}
	if arm == "" {
		return nil, field.Errorf(FieldArm, nil, "which arm the window was")
	}
	t, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		return nil, field.Errorf(FieldStart, strconv.Quote(start), "want an RFC 3339 time such as 2025-06-01T10:00:00Z")
	}
	s.Trials[0].start, s.Trials[0].until = t, t.Add(phases.Total())
	if msg := phases.check(); msg != "" {
		return nil, field.Errorf(FieldPhases, nil, "%s", msg[len("phases: "):])
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("no diagnostic data given: name each member's diagnostic.data directory")
	}
	for _, p := range sources {
		if mongouri.HasScheme(p) {
			return nil, fmt.Errorf("diagnostic data %s: a MongoDB connection string; import reads members' diagnostic.data folders or FTDC files (copy them from the server first)", arms.RedactURI(p))
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("diagnostic data %s: %v", p, err)
		}
	}
	if mongouri.HasScheme(outcomes) {
		return nil, field.Errorf(FieldOutcomes, arms.RedactURI(outcomes), "a MongoDB connection string; want a JSON lines or CSV file")
	}
	if outcomes != "" {
		if _, err := os.Stat(outcomes); err != nil {
			return nil, field.Errorf(FieldOutcomes, outcomes, "%w", err)
		}
	}
	return s, nil
}
