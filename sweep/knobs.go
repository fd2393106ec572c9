package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/run/virtual"
	"github.com/qmlsab/qmlsab/workload"
)

// Unit kinds of a knob's values.
const (
	UnitBytes   = "B"
	UnitPerSec  = "/s"
	UnitBytesPS = "B/s"
	UnitPercent = "%"
	UnitMillis  = "ms"
)

// Knob is one name of the sweep namespace: a setting of the model, the
// workload or an arm that a sweep may vary and the fit may estimate.
//
// The namespace has five prefixes:
//
//	host.*     the machine around mongod (model.Host; the host model only)
//	hw.*       the member's hardware (model.Hardware)
//	workload.* the spill_to_disk storm (workload.SpillToDisk)
//	param.*    a server parameter by mongod's name (model.ParamSpecs);
//	           queryMemoryLoadShedding* parameters apply to arms that shed
//	           (low mark ≥ 0), every other parameter to every arm
//	killop.*   the killOp actor (arms with one, such as D)
type Knob struct {
	Name string
	Doc  string
	Unit string
	// Integer knobs take whole numbers only.
	Integer bool
	// Min and Max bound a numeric value (inclusive): what the model can
	// run, not what is plausible.
	Min, Max float64
	// Choices are a non-numeric knob's values (booleans, strings); nil
	// for a number knob, empty for a string knob that takes any string.
	Choices []string

	// appliesTo reports whether the knob changes arm a (nil: every arm).
	appliesTo func(a arms.Arm) bool
	// set applies a value to a trial's setting.
	set func(s *Setting, v Value) error
	// get reads the knob's value from a setting.
	get func(s *Setting) Value
}

// AppliesTo reports whether the knob changes arm a's trials.
func (k Knob) AppliesTo(a arms.Arm) bool { return k.appliesTo == nil || k.appliesTo(a) }

// Value is a knob's value: a number, or a string for a choice knob.
type Value struct {
	Num float64
	Str string
	// IsStr marks a choice value.
	IsStr bool
}

// Num makes a number value.
func Num(f float64) Value { return Value{Num: f} }

// Str makes a choice value.
func Str(s string) Value { return Value{Str: s, IsStr: true} }

// Any is the value as JSON has it: a number or a string.
func (v Value) Any() any {
	if v.IsStr {
		return v.Str
	}
	return v.Num
}

// Equal reports whether two values are the same.
func (v Value) Equal(w Value) bool {
	return v.IsStr == w.IsStr && (v.IsStr && v.Str == w.Str || !v.IsStr && v.Num == w.Num)
}

// Label writes v in the knob's unit for people: bytes in binary units.
func (k Knob) Label(v Value) string {
	if v.IsStr {
		return v.Str
	}
	switch k.Unit {
	case UnitBytes:
		return units.HumanBytes(v.Num)
	case UnitBytesPS:
		return units.HumanBytes(v.Num) + "/s"
	}
	s := strconv.FormatFloat(v.Num, 'g', 6, 64)
	if k.Unit != "" {
		s += " " + k.Unit
	}
	return s
}

// Setting is everything one trial of one arm runs with: the virtual
// engine's configuration (hardware, host, workload) and the arm.
type Setting struct {
	Config virtual.Config
	Arm    arms.Arm
}

// clone copies a setting deeply enough that knobs may change it: the host,
// the arm's parameters and its actors.
func (s Setting) clone() Setting {
	if h := s.Config.Hardware.Host; h != nil {
		c := *h
		s.Config.Hardware.Host = &c
	}
	s.Config.Workload.Mix = slices.Clone(s.Config.Workload.Mix)
	a := s.Arm
	a.SetParameters = make(map[string]string, len(s.Arm.SetParameters))
	for k, v := range s.Arm.SetParameters {
		a.SetParameters[k] = v
	}
	a.Actors = slices.Clone(s.Arm.Actors)
	for i, act := range a.Actors {
		if act.KillOp != nil {
			c := *act.KillOp
			a.Actors[i].KillOp = &c
		}
	}
	s.Arm = a
	return s
}

// host is the setting's host, its machine's default host when it names
// none (model.Hardware.WithDefaults' rule), so a knob can set one field.
func (s *Setting) host() *model.Host {
	if s.Config.Hardware.Host == nil {
		h := model.DefaultHostFor(s.Config.Hardware.WithDefaults().MemLimitBytes)
		s.Config.Hardware.Host = &h
	}
	return s.Config.Hardware.Host
}

// Knobs is the namespace, sorted by name.
var Knobs = func() []Knob {
	var ks []Knob
	host := func(name, doc, unit string, lo, hi float64, integer bool, f func(h *model.Host) any) {
		ks = append(ks, Knob{Name: "host." + name, Doc: doc, Unit: unit, Min: lo, Max: hi, Integer: integer,
			set: func(s *Setting, v Value) error {
				setField(f(s.host()), v)
				return nil
			},
			get: func(s *Setting) Value { return getField(f(s.host())) }})
	}
	const gib = 1 << 30
	host("otherBytes", "resident memory of the other processes on the host (agents); only other + kernel matters", UnitBytes, 0, 1<<40, true, func(h *model.Host) any { return &h.OtherProcessBytes })
	host("kernelBytes", "memory the kernel keeps for itself (slab, page tables)", UnitBytes, 0, 1<<40, true, func(h *model.Host) any { return &h.KernelBytes })
	host("dirtyRatio", "vm.dirty_ratio: dirty page cache (percent of dirtyable memory) at which a writer is paused", UnitPercent, 1, 100, false, func(h *model.Host) any { return &h.DirtyRatio })
	host("dirtyBackgroundRatio", "vm.dirty_background_ratio: dirty share at which background writeback starts", UnitPercent, 0, 100, false, func(h *model.Host) any { return &h.DirtyBackgroundRatio })
	host("mongodBaseBytes", "mongod's heap outside the WiredTiger cache and query memory with no load", UnitBytes, 0, 1<<40, true, func(h *model.Host) any { return &h.MongodBaseBytes })
	host("wtCacheBytes", "WiredTiger cache size (0: mongod's rule, 50 % of memory − 1 GiB)", UnitBytes, 0, 1<<40, true, func(h *model.Host) any { return &h.WTCacheBytes })
	host("wtEvictionTarget", "WiredTiger eviction_target, percent of the cache", UnitPercent, 1, 100, false, func(h *model.Host) any { return &h.WTEvictionTarget })
	host("dataSetBytes", "in-cache size of the data the storm reads", UnitBytes, 1<<20, 1<<40, true, func(h *model.Host) any { return &h.DataSetBytes })
	host("wtInitialFill", "share of the cache's eventual fill it holds when the process starts", "", 0, 1, false, func(h *model.Host) any { return &h.WTInitialFill })
	host("releaseBytesPerSec", "allocator release rate (tcmallocReleaseRate): how fast freed pages leave RSS", UnitBytesPS, 0, 1<<40, false, func(h *model.Host) any { return &h.ReleaseBytesPerSec })
	host("untrackedPerOpBytes", "resident bytes of a live operation no tracker counts", UnitBytes, 0, gib, true, func(h *model.Host) any { return &h.UntrackedPerOpBytes })
	host("untrackedPerCursorBytes", "resident bytes of an idle cursor no tracker counts", UnitBytes, 0, gib, true, func(h *model.Host) any { return &h.UntrackedPerCursorBytes })
	host("spillRunBufferBytes", "read buffer of one spilled run while a cursor merges its runs", UnitBytes, 0, gib, true, func(h *model.Host) any { return &h.SpillRunBufferBytes })
	ks = append(ks, Knob{Name: "host.replyBufferUntracked", Doc: "a getMore's reply batch counts as untracked memory", Choices: []string{"true", "false"},
		set: func(s *Setting, v Value) error {
			s.host().ReplyBufferUntracked = v.Str == "true"
			return nil
		},
		get: func(s *Setting) Value { return Str(strconv.FormatBool(s.host().ReplyBufferUntracked)) }})

	hw := func(name, doc, unit string, lo, hi float64, integer bool, f func(h *model.Hardware) any) {
		ks = append(ks, Knob{Name: "hw." + name, Doc: doc, Unit: unit, Min: lo, Max: hi, Integer: integer,
			set: func(s *Setting, v Value) error { setField(f(&s.Config.Hardware), v); return nil },
			get: func(s *Setting) Value { return getField(f(&s.Config.Hardware)) }})
	}
	hw("cpus", "vCPUs of each member", "", 1, 1024, true, func(h *model.Hardware) any { return &h.CPUs })
	hw("memLimitBytes", "each member's memory (the host's MemTotal; the shedder's marks are shares of it)", UnitBytes, 1<<30, 1<<42, true, func(h *model.Hardware) any { return &h.MemLimitBytes })
	hw("allocOverhead", "tracked bytes × this = their resident bytes (allocator fragmentation)", "", 1, 4, false, func(h *model.Hardware) any { return &h.AllocOverhead })
	hw("diskBytesPerSec", "spill disk bandwidth, shared by readers (and writeback with the host model)", UnitBytesPS, 1<<20, 1<<40, false, func(h *model.Hardware) any { return &h.DiskBytesPerSec })

	// Workload values: bounds are the workload spec's (workload.Validate
	// checks each cell's whole workload).
	wl := func(name, doc, unit string, integer bool, f func(w *virtual.Config) any) {
		ks = append(ks, Knob{Name: "workload." + name, Doc: doc, Unit: unit, Integer: integer, Min: math.Inf(-1), Max: math.Inf(1),
			set: func(s *Setting, v Value) error { setField(f(&s.Config), v); return nil },
			get: func(s *Setting) Value { return getField(f(&s.Config)) }})
	}
	wl("stormRate", "storm queries per second (Poisson arrivals)", UnitPerSec, false, func(c *virtual.Config) any { return &c.Workload.StormRate })
	wl("scanDocs", "median documents a storm query scans", "", true, func(c *virtual.Config) any { return &c.Workload.ScanDocs })
	wl("docBytes", "bytes per document", UnitBytes, true, func(c *virtual.Config) any { return (*int64)(&c.Workload.DocBytes) })
	wl("holdBytes", "what an idle cursor keeps (merge buffers)", UnitBytes, true, func(c *virtual.Config) any { return (*int64)(&c.Workload.HoldBytes) })
	wl("loadBytes", "median buffer a getMore loads (a window partition)", UnitBytes, true, func(c *virtual.Config) any { return (*int64)(&c.Workload.LoadBytes) })
	wl("batchDocs", "getMore batch size", "", true, func(c *virtual.Config) any { return &c.Workload.BatchDocs })
	wl("outputShare", "share of scanned documents a query returns", "", false, func(c *virtual.Config) any { return &c.Workload.OutputShare })
	wl("canaryRate", "canaries per second", UnitPerSec, false, func(c *virtual.Config) any { return &c.Workload.CanaryRate })
	wl("maxPoolSize", "connections each client keeps to one member at most (0: no limit)", "", true, func(c *virtual.Config) any { return &c.Workload.MaxPoolSize })
	ks = append(ks, Knob{Name: "workload.windowShare", Doc: "share of $setWindowFields in the storm's mix, the rest split evenly between $sort and $group", Min: 0, Max: 1,
		set: func(s *Setting, v Value) error {
			rest := (1 - v.Num) / 2
			s.Config.Workload.Mix = []workload.StageShare{{Stage: "$setWindowFields", Weight: v.Num}, {Stage: "$sort", Weight: rest}, {Stage: "$group", Weight: rest}}
			if v.Num >= 1 {
				s.Config.Workload.Mix = s.Config.Workload.Mix[:1]
			}
			return nil
		},
		get: func(s *Setting) Value {
			var w, total float64
			for _, m := range s.Config.Workload.Mix {
				total += m.Weight
				if m.Stage == "$setWindowFields" {
					w += m.Weight
				}
			}
			if total <= 0 {
				return Num(0)
			}
			return Num(w / total)
		}})

	// Server parameters, by mongod's names.
	for _, p := range model.ParamSpecs {
		if modelReads(p) {
			ks = append(ks, paramKnob(p))
		}
	}

	ko := func(name, doc, unit string, lo, hi float64, integer bool, f func(c *killopSetting) any) {
		ks = append(ks, Knob{Name: "killop." + name, Doc: doc, Unit: unit, Min: lo, Max: hi, Integer: integer,
			appliesTo: func(a arms.Arm) bool { return a.KillOp() != nil },
			set: func(s *Setting, v Value) error {
				k := s.Arm.KillOp()
				if k == nil {
					return nil
				}
				c := killopSetting{RSSHighPercent: k.RSSHighPercent, IntervalMillis: int64(k.Interval / time.Millisecond), MaxKillsPerRound: int64(k.MaxKillsPerRound)}
				setField(f(&c), v)
				k.RSSHighPercent, k.Interval, k.MaxKillsPerRound = c.RSSHighPercent, time.Duration(c.IntervalMillis)*time.Millisecond, int(c.MaxKillsPerRound)
				return nil
			},
			get: func(s *Setting) Value {
				k := s.Arm.KillOp()
				if k == nil {
					return Num(0)
				}
				c := killopSetting{RSSHighPercent: k.RSSHighPercent, IntervalMillis: int64(k.Interval / time.Millisecond), MaxKillsPerRound: int64(k.MaxKillsPerRound)}
				return getField(f(&c))
			}})
	}
	ks = append(ks, Knob{Name: "killop.policy", Doc: "which operations the actor considers (largest tracked memory first until RSS's excess is covered)", Choices: killop.Policies,
		appliesTo: func(a arms.Arm) bool { return a.KillOp() != nil },
		set: func(s *Setting, v Value) error {
			if k := s.Arm.KillOp(); k != nil {
				if !killop.ValidPolicy(v.Str) {
					return fmt.Errorf("killop.policy: %q is not one of %s", v.Str, strings.Join(killop.Policies, ", "))
				}
				k.Policy = v.Str
			}
			return nil
		},
		get: func(s *Setting) Value {
			if k := s.Arm.KillOp(); k != nil && k.Policy != "" {
				return Str(k.Policy)
			}
			return Str(killop.PolicyDefault)
		}})
	ko("rssHighPercent", "the actor kills when RSS is above this share of the memory limit (D: 70)", UnitPercent, 0, 100, false, func(c *killopSetting) any { return &c.RSSHighPercent })
	ko("intervalMillis", "the actor's sampling interval", UnitMillis, 1, 60_000, true, func(c *killopSetting) any { return &c.IntervalMillis })
	ko("maxKillsPerRound", "kills per sample at most", "", 1, 1_000_000, true, func(c *killopSetting) any { return &c.MaxKillsPerRound })

	slices.SortFunc(ks, func(a, b Knob) int { return strings.Compare(a.Name, b.Name) })
	return ks
}()

type killopSetting struct {
	RSSHighPercent   float64
	IntervalMillis   int64
	MaxKillsPerRound int64
}

// sheds reports whether an arm runs the server's shedder (its low mark is
// set and not −1).
func sheds(a arms.Arm) bool {
	v, ok := a.SetParameters["queryMemoryLoadSheddingLowMarkPercent"]
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return err == nil && f >= 0
}

// modelReads reports whether the model obeys a parameter: a value other
// than its default changes the model's parameters (logLevel, say, does
// not).
func modelReads(p model.ParamSpec) bool {
	var other string
	switch p.Type {
	case model.TypeBool:
		other = strconv.FormatBool(!p.Default.(bool))
	case model.TypeString:
		for _, c := range p.Choices {
			if c != p.Default {
				other = c
			}
		}
	default:
		f, _ := strconv.ParseFloat(model.FormatValue(p.Default), 64)
		next := f + 1
		if p.HasBounds && next > p.Max {
			next = f - 1
		}
		other = strconv.FormatFloat(next, 'f', -1, 64)
	}
	if other == "" {
		return false
	}
	got, err := model.ParamsFrom(map[string]string{p.Name: other})
	if err != nil {
		return true // refused together with the defaults: it is checked, so read
	}
	return got != model.DefaultParams()
}

func paramKnob(p model.ParamSpec) Knob {
	k := Knob{Name: "param." + p.Name, Doc: p.Doc, Min: math.Inf(-1), Max: math.Inf(1)}
	switch p.Type {
	case model.TypeBool:
		k.Choices = []string{"true", "false"}
	case model.TypeString:
		k.Choices = p.Choices
		if len(k.Choices) == 0 {
			k.Choices = []string{} // any string, given as a list
		}
	default:
		k.Integer = p.Type == model.TypeInt || p.Type == model.TypeLong
		if p.HasBounds {
			k.Min, k.Max = p.Min, p.Max
		}
		if strings.HasSuffix(p.Name, "Bytes") {
			k.Unit = UnitBytes
		} else if strings.HasSuffix(p.Name, "Percent") {
			k.Unit = UnitPercent
		} else if strings.HasSuffix(p.Name, "Millis") || strings.HasSuffix(p.Name, "MS") {
			k.Unit = UnitMillis
		}
	}
	if strings.HasPrefix(p.Name, "queryMemoryLoadShedding") || strings.HasPrefix(p.Name, "simShed") {
		k.appliesTo = sheds
		k.Doc += " (applied to arms that shed)"
	}
	name := p.Name
	k.set = func(s *Setting, v Value) error {
		text := v.Str
		if !v.IsStr {
			text = strconv.FormatFloat(v.Num, 'f', -1, 64)
		}
		if _, err := p.ParseValue(text); err != nil {
			return err
		}
		s.Arm.SetParameters[name] = text
		return nil
	}
	k.get = func(s *Setting) Value {
		text, ok := s.Arm.SetParameters[name]
		if !ok {
			text = model.FormatValue(p.Default)
		}
		if p.Type == model.TypeBool || p.Type == model.TypeString {
			return Str(strings.TrimSpace(text))
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return Str(text)
		}
		return Num(f)
	}
	return k
}

func setField(ptr any, v Value) {
	switch p := ptr.(type) {
	case *int64:
		*p = int64(math.Round(v.Num))
	case *int:
		*p = int(math.Round(v.Num))
	case *float64:
		*p = v.Num
	}
}

func getField(ptr any) Value {
	switch p := ptr.(type) {
	case *int64:
		return Num(float64(*p))
	case *int:
		return Num(float64(*p))
	case *float64:
		return Num(*p)
	}
	return Value{}
}

// KnobValue is k's value in a setting.
func KnobValue(k Knob, s Setting) Value {
	c := s.clone()
	return k.get(&c)
}

// LookupKnob finds a knob by name.
func LookupKnob(name string) (Knob, bool) {
	i := slices.IndexFunc(Knobs, func(k Knob) bool { return k.Name == name })
	if i < 0 {
		return Knob{}, false
	}
	return Knobs[i], true
}

// Axis is one varied knob and its values, in order.
type Axis struct {
	Knob   Knob
	Values []Value
	// Spec is the flag's text (NAME=FROM:TO:STEP), for messages.
	Spec string
}

// Limits of a sweep.
const (
	MaxAxes       = 2
	MaxAxisPoints = 101
)

// ErrUnknownKnob is ParseVary's error (and ParseSet's, ParseDim's) for a
// name that is no knob of the namespace.
var ErrUnknownKnob = errors.New("unknown name")

// ParseVary reads one --vary: NAME=FROM:TO:STEP (numbers; byte knobs take
// KiB, MiB, GiB or TiB suffixes) or NAME=V1,V2,... (any knob; the only
// form for choice knobs). The grid is FROM, FROM+STEP, ... up to TO.
func ParseVary(text string) (Axis, error) {
	name, spec, ok := strings.Cut(text, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(spec) == "" {
		return Axis{}, fmt.Errorf("%q: want NAME=FROM:TO:STEP or NAME=V1,V2,...", text)
	}
	k, found := LookupKnob(name)
	if !found {
		return Axis{}, fmt.Errorf("%q: %w %s (want host.*, hw.*, workload.*, param.* or killop.*)", text, ErrUnknownKnob, name)
	}
	ax := Axis{Knob: k, Spec: text}
	if strings.Contains(spec, ":") {
		if k.Choices != nil {
			return Axis{}, fmt.Errorf("%q: %s takes a list of values (%s), not a range", text, name, strings.Join(k.Choices, ","))
		}
		parts := strings.Split(spec, ":")
		if len(parts) != 3 {
			return Axis{}, fmt.Errorf("%q: want FROM:TO:STEP", text)
		}
		var f [3]float64
		for i, p := range parts {
			v, err := parseNumber(p, k.Unit)
			if err != nil {
				return Axis{}, fmt.Errorf("%q: %v", text, err)
			}
			f[i] = v
		}
		from, to, step := f[0], f[1], f[2]
		// The grid is counted before it is made: FROM + i·STEP never
		// passes TO when STEP is below FROM's float64 precision, and a
		// loop waiting for it to appended until memory ran out. A STEP
		// under the spacing of float64s at the grid's largest magnitude
		// (its ulp) is refused: FROM+STEP would be FROM, or two points
		// would round to one.
		points := math.Floor((to-from)/step+1e-9) + 1 // 1e-9: 0:1:0.1 is 11 points, not 10
		largest := max(math.Abs(from), math.Abs(to))
		ulp := math.Nextafter(largest, math.Inf(1)) - largest
		switch {
		case !(step > 0):
			return Axis{}, fmt.Errorf("%q: STEP must be above 0", text)
		case to < from:
			return Axis{}, fmt.Errorf("%q: TO is below FROM", text)
		case step < ulp:
			return Axis{}, fmt.Errorf("%q: STEP %v is below the precision of float64 at %v (%.3g): FROM+STEP would be FROM, or points would coincide", text, step, largest, ulp)
		case !(points <= MaxAxisPoints): // +Inf when TO−FROM overflows
			return Axis{}, fmt.Errorf("%q: %.4g points; at most %d per axis", text, points, MaxAxisPoints)
		}
		for i := range int(points) {
			// Rounding may take the last point a hair past TO; TO it is.
			ax.Values = append(ax.Values, Num(min(from+float64(i)*step, to)))
		}
	} else {
		for _, p := range strings.Split(spec, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				return Axis{}, fmt.Errorf("%q: empty value in the list", text)
			}
			if k.Choices != nil {
				if len(k.Choices) > 0 && !slices.Contains(k.Choices, p) {
					return Axis{}, fmt.Errorf("%q: %s is not one of %s", text, p, strings.Join(k.Choices, ", "))
				}
				ax.Values = append(ax.Values, Str(p))
				continue
			}
			v, err := parseNumber(p, k.Unit)
			if err != nil {
				return Axis{}, fmt.Errorf("%q: %v", text, err)
			}
			ax.Values = append(ax.Values, Num(v))
		}
		if len(ax.Values) > MaxAxisPoints {
			return Axis{}, fmt.Errorf("%q: %d values; at most %d per axis", text, len(ax.Values), MaxAxisPoints)
		}
		for i, v := range ax.Values {
			if slices.ContainsFunc(ax.Values[:i], v.Equal) {
				return Axis{}, fmt.Errorf("%q: %s is listed twice", text, k.Label(v))
			}
		}
	}
	for _, v := range ax.Values {
		if v.IsStr {
			continue
		}
		if k.Integer && v.Num != math.Trunc(v.Num) {
			return Axis{}, fmt.Errorf("%q: %s takes whole numbers, not %v", text, name, v.Num)
		}
		if v.Num < k.Min || v.Num > k.Max {
			return Axis{}, fmt.Errorf("%q: %s is outside [%s, %s]", text, k.Label(v), k.Label(Num(k.Min)), k.Label(Num(k.Max)))
		}
	}
	return ax, nil
}

// ParseSet reads one --set: NAME=VALUE, a knob held at one value.
func ParseSet(text string) (Axis, error) {
	name, v, ok := strings.Cut(text, "=")
	if !ok || strings.ContainsAny(v, ":,") {
		return Axis{}, fmt.Errorf("%q: want NAME=VALUE", text)
	}
	ax, err := ParseVary(strings.TrimSpace(name) + "=" + v)
	if err != nil {
		return Axis{}, err
	}
	ax.Spec = text
	return ax, nil
}

var byteSuffixes = []struct {
	s string
	f float64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}

// parseNumber reads a number, with a binary suffix for byte knobs.
func parseNumber(s, unit string) (float64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if unit == UnitBytes || unit == UnitBytesPS {
		t := strings.TrimSuffix(s, "/s")
		for _, suf := range byteSuffixes {
			if strings.HasSuffix(t, suf.s) {
				t, mult = strings.TrimSpace(strings.TrimSuffix(t, suf.s)), suf.f
				break
			}
		}
		s = strings.TrimSuffix(t, "B")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsInf(f*mult, 0) { // 1e308TiB
		return 0, fmt.Errorf("%q: too large", s)
	}
	return f * mult, nil
}
