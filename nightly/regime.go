package nightly

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/internal/specdiff"
)

// What a series compares
//
// A series (one arm's values of one metric, or its effect against the
// baseline arm) compares nights of one workload run against one arm
// definition. Where the workload a night ran differs from the night
// before it, or the arm's definition does, the series has a change point
// by construction: a Redefinition, labelled as such and never a
// regression. The series is cut there into segments, and E-Divisive runs
// on each segment alone. Nights of another workload (by name) are never
// compared with each other's: each workload's nights form their own line.
//
// Tonight's check compares the newest night with the nights of its own
// segment; on the night of a redefinition itself it differs by what
// changed. A changed workload is another yardstick: the night has no
// baseline yet. A changed arm definition is what the night tests (a
// commit to the arms file, a retuned actor): the night is compared with the
// nights of the arm's previous definition, and a finding says which
// definition change it coincides with; from the next night on the
// baseline holds only the new definition's nights.

// Redefinition is a night whose workload or arm definitions differ from
// those of the night before it (of the same workload): what it compares
// changed by construction.
type Redefinition struct {
	// Night is the night's number in the history (1-based, as listed),
	// RunID its run; Previous is the night it differs from.
	Night    int       `json:"night"`
	RunID    string    `json:"runId"`
	Started  time.Time `json:"started"`
	Previous string    `json:"previousRunId"`
	// Workload lists the workload's changed keys ("storm_rate 271.5 →
	// 320"); Arms each arm's, by arm.
	Workload []string            `json:"workload,omitempty"`
	Arms     map[string][]string `json:"arms,omitempty"`
}

// Describe says what changed in one line: "workload storm_rate 271.5 →
// 320; arm D actors[0].killop.rssHighPercent 70 → 80".
func (r Redefinition) Describe() string {
	var parts []string
	if len(r.Workload) > 0 {
		parts = append(parts, "workload "+strings.Join(r.Workload, ", "))
	}
	for _, a := range slices.Sorted(maps.Keys(r.Arms)) {
		if len(r.Arms[a]) == 0 {
			continue
		}
		parts = append(parts, "arm "+a+" "+strings.Join(r.Arms[a], ", "))
	}
	return strings.Join(parts, "; ")
}

// maxKeys bounds the keys a change names (the rest are counted).
const maxKeys = 4

// workloadChanges lists how night b's workload differs from night a's:
// key by key when both kept their definitions, else by digest (a
// description alone is no change).
func workloadChanges(a, b history.RunSummary) []string {
	if len(a.WorkloadDefinition) > 0 && len(b.WorkloadDefinition) > 0 {
		ch, err := specdiff.Diff(a.WorkloadDefinition, b.WorkloadDefinition,
			specdiff.Options{Ignore: []string{"description"}, Strip: workloadKind(b.WorkloadDefinition)})
		if err == nil {
			return describe(ch)
		}
	}
	if a.WorkloadDigest != "" && b.WorkloadDigest != "" && a.WorkloadDigest != b.WorkloadDigest {
		return []string{fmt.Sprintf("digest %s → %s (an older night kept no definition to name the keys)", a.WorkloadDigest, b.WorkloadDigest)}
	}
	return nil
}

// workloadKind is the kind a workload definition names (its own section).
func workloadKind(def json.RawMessage) string {
	var head struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(def, &head)
	return head.Kind
}

// armChanges lists how arm b's definition differs from arm a's: key by
// key when both nights kept it, else by its server parameters. The build
// is no part of it: it is what a nightly job tests.
func armChanges(a, b history.Arm) []string {
	if len(a.Definition) > 0 && len(b.Definition) > 0 {
		ch, err := specdiff.Diff(a.Definition, b.Definition, specdiff.Options{Ignore: []string{"build"}})
		if err == nil {
			return describe(ch)
		}
	}
	var ch []specdiff.Change
	keys := maps.Clone(a.Parameters)
	if keys == nil {
		keys = map[string]string{}
	}
	maps.Copy(keys, b.Parameters)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, xok := a.Parameters[k]
		y, yok := b.Parameters[k]
		if xok == yok && x == y {
			continue
		}
		if !xok {
			x = specdiff.Unset
		}
		if !yok {
			y = specdiff.Unset
		}
		ch = append(ch, specdiff.Change{Key: "setParameters." + k, Old: x, New: y})
	}
	return describe(ch)
}

func describe(ch []specdiff.Change) []string {
	var out []string
	for i, c := range ch {
		if i == maxKeys {
			out = append(out, fmt.Sprintf("… and %d more", len(ch)-maxKeys))
			break
		}
		out = append(out, c.String())
	}
	return out
}

func armOf(r history.RunSummary, name string) (history.Arm, bool) {
	for _, a := range r.ArmDetails {
		if a.Name == name {
			return a, true
		}
	}
	return history.Arm{}, false
}

// redefinitions lists the nights whose workload or arms differ from the
// night before of the same workload (for an arm: the last such night
// that ran it).
func redefinitions(runs []history.RunSummary) []Redefinition {
	var out []Redefinition
	last := map[string]int{}       // workload name → its latest night
	lastArm := map[[2]string]int{} // (workload, arm) → the latest night that ran it
	for i, r := range runs {
		red := Redefinition{Night: i + 1, RunID: r.ID, Started: r.Started}
		if p, ok := last[r.Workload]; ok {
			red.Previous = runs[p].ID
			red.Workload = workloadChanges(runs[p], r)
		}
		for _, a := range r.ArmDetails {
			p, ok := lastArm[[2]string{r.Workload, a.Name}]
			if !ok {
				continue
			}
			prev, _ := armOf(runs[p], a.Name)
			if ch := armChanges(prev, a); len(ch) > 0 {
				if red.Arms == nil {
					red.Arms = map[string][]string{}
				}
				red.Arms[a.Name] = ch
				if red.Previous == "" {
					red.Previous = runs[p].ID
				}
			}
		}
		if len(red.Workload) > 0 || len(red.Arms) > 0 {
			out = append(out, red)
		}
		last[r.Workload] = i
		for _, a := range r.ArmDetails {
			lastArm[[2]string{r.Workload, a.Name}] = i
		}
	}
	return out
}

// boundary is why a series' point starts a new segment.
type boundary struct {
	// first: the first night of its workload in the series (nothing
	// before it to compare with).
	first bool
	// workload and arms list what changed since the series' previous
	// night of the same workload (arms: the series' arm, and for an
	// effect the baseline arm).
	workload []string
	arms     map[string][]string
}

func (b boundary) redefinedArmsOnly() bool {
	return !b.first && len(b.workload) == 0 && len(b.arms) > 0
}

func (b boundary) text() string {
	return Redefinition{Workload: b.workload, Arms: b.arms}.Describe()
}

// segmentation cuts one series (its nights' run ids, in order) into
// segments: seg[i] is point i's segment, and at[s] the boundary that
// starts segment s. Points of one workload name share segments only with
// each other; effectOf, when set, names the baseline arm whose definition
// also counts.
type segmentation struct {
	seg   []int
	at    []boundary
	first []int // first point of each segment
	prev  []int // the segment before s of the same workload (-1: none)
}

// definitions compares the definitions of pairs of nights once each: a
// history's series share their nights, and every comparison decodes two
// definitions.
type definitions struct {
	byID     map[string]history.RunSummary
	workload map[[2]string][]string
	arms     map[[3]string][]string
}

func newDefinitions(runs []history.RunSummary) *definitions {
	d := &definitions{byID: map[string]history.RunSummary{}, workload: map[[2]string][]string{}, arms: map[[3]string][]string{}}
	for _, r := range runs {
		d.byID[r.ID] = r
	}
	return d
}

// workloadChanged is workloadChanges of two nights, by id.
func (d *definitions) workloadChanged(a, b string) []string {
	k := [2]string{a, b}
	ch, ok := d.workload[k]
	if !ok {
		ch = workloadChanges(d.byID[a], d.byID[b])
		d.workload[k] = ch
	}
	return ch
}

// armChanged is armChanges of one arm on two nights, by id (none when
// either night lacks the arm).
func (d *definitions) armChanged(a, b, arm string) []string {
	k := [3]string{a, b, arm}
	ch, ok := d.arms[k]
	if !ok {
		x, xok := armOf(d.byID[a], arm)
		y, yok := armOf(d.byID[b], arm)
		if xok && yok {
			ch = armChanges(x, y)
		}
		d.arms[k] = ch
	}
	return ch
}

func segment(ids []string, defs *definitions, arm string, effect bool) segmentation {
	byID := defs.byID
	var s segmentation
	lastPoint := map[string]int{} // workload → the series' latest point of it
	lastSeg := map[string]int{}
	for i, id := range ids {
		r := byID[id]
		p, ok := lastPoint[r.Workload]
		var b boundary
		if !ok {
			b.first = true
		} else {
			b.workload = defs.workloadChanged(ids[p], id)
			names := []string{arm}
			if effect && r.Baseline != "" && r.Baseline != arm {
				names = append(names, r.Baseline)
			}
			for _, n := range names {
				if ch := defs.armChanged(ids[p], id, n); len(ch) > 0 {
					if b.arms == nil {
						b.arms = map[string][]string{}
					}
					b.arms[n] = ch
				}
			}
		}
		if b.first || len(b.workload) > 0 || len(b.arms) > 0 {
			prev := -1
			if ok {
				prev = lastSeg[r.Workload]
			}
			s.at, s.first, s.prev = append(s.at, b), append(s.first, i), append(s.prev, prev)
			lastSeg[r.Workload] = len(s.at) - 1
		}
		s.seg = append(s.seg, lastSeg[r.Workload])
		lastPoint[r.Workload] = i
	}
	return s
}

// points are the series' points in segment sg, in order.
func (s segmentation) points(sg int) []int {
	var out []int
	for i, x := range s.seg {
		if x == sg {
			out = append(out, i)
		}
	}
	return out
}
