package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// ErrUnknown: a filter or a name matches nothing in the history (a typo,
// most often). The error names the value and lists what the history holds.
var ErrUnknown = errors.New("matches nothing in the history")

// Checked wraps a store so that its reads refuse what matches nothing
// instead of quietly returning no nights: a Filter's workload or label no
// stored night has, or that no night has together; a Series or Effects arm
// none of the selected nights ran; a metric that is neither among known
// (the metric names this qmlsab computes, which a history may simply not
// hold yet) nor stored for the arm. Errors wrap ErrUnknown. A filter of an
// empty history selects nothing without an error only when it names
// nothing.
func Checked(st Store, known []string) Store {
	return &checkedStore{Store: st, known: known}
}

type checkedStore struct {
	Store
	known []string

	mu     sync.Mutex
	all    []RunSummary
	loaded bool
}

// nights are every stored night's summary, read once.
func (s *checkedStore) nights(ctx context.Context) ([]RunSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		all, err := s.Store.List(ctx, Filter{})
		if err != nil {
			return nil, err
		}
		s.all, s.loaded = all, true
	}
	return s.all, nil
}

// selected checks f's workload and labels and returns the nights they
// select (time bounds and Last aside).
func (s *checkedStore) selected(ctx context.Context, f Filter) ([]RunSummary, error) {
	all, err := s.nights(ctx)
	if err != nil {
		return nil, err
	}
	if f.Workload != "" && !slices.ContainsFunc(all, func(r RunSummary) bool { return r.Workload == f.Workload }) {
		var have []string
		for _, r := range all {
			have = append(have, r.Workload)
		}
		return nil, fmt.Errorf("workload %q %w (%s)", f.Workload, ErrUnknown, holding("workloads", have))
	}
	for _, k := range sortedKeys(f.Labels) {
		v := f.Labels[k]
		if !slices.ContainsFunc(all, func(r RunSummary) bool { l, ok := r.Labels[k]; return ok && l == v }) {
			var have []string
			for _, r := range all {
				for lk, lv := range r.Labels {
					have = append(have, lk+"="+lv)
				}
			}
			return nil, fmt.Errorf("label %s=%s %w (%s)", k, v, ErrUnknown, holding("labels", have))
		}
	}
	var out []RunSummary
	for _, r := range all {
		if f.Workload != "" && r.Workload != f.Workload {
			continue
		}
		ok := true
		for k, v := range f.Labels {
			if l, has := r.Labels[k]; !has || l != v {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	if len(out) == 0 && (f.Workload != "" || len(f.Labels) > 0) {
		var parts []string
		if f.Workload != "" {
			parts = append(parts, "workload "+f.Workload)
		}
		for _, k := range sortedKeys(f.Labels) {
			parts = append(parts, "label "+k+"="+f.Labels[k])
		}
		return nil, fmt.Errorf("%s together %w: each is on some night, but no night has them all", strings.Join(parts, " and "), ErrUnknown)
	}
	return out, nil
}

// unknownMetric is the error of a metric neither stored nor known.
func unknownMetric(name string, known []string) error {
	return fmt.Errorf("metric %q %w and is not one qmlsab computes (metrics it computes: %s)", name, ErrUnknown, strings.Join(known, ", "))
}

// holding lists distinct values for an error message.
func holding(what string, values []string) string {
	set := map[string]bool{}
	for _, v := range values {
		set[v] = true
	}
	if len(set) == 0 {
		return "the history has no " + what
	}
	return "the history's " + what + ": " + strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

func (s *checkedStore) List(ctx context.Context, f Filter) ([]RunSummary, error) {
	if _, err := s.selected(ctx, f); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, f)
}

func (s *checkedStore) Runs(ctx context.Context, f Filter) ([]Run, error) {
	if _, err := s.selected(ctx, f); err != nil {
		return nil, err
	}
	return s.Store.Runs(ctx, f)
}

// checkArm refuses an arm no selected night ran.
func (s *checkedStore) checkArm(ctx context.Context, arm string, f Filter) error {
	sel, err := s.selected(ctx, f)
	if err != nil {
		return err
	}
	var have []string
	for _, r := range sel {
		if slices.Contains(r.Arms, arm) {
			return nil
		}
		have = append(have, r.Arms...)
	}
	return fmt.Errorf("arm %q %w (%s)", arm, ErrUnknown, holding("arms", have))
}

func (s *checkedStore) unknownMetric(metric string) error {
	return unknownMetric(metric, s.known)
}

func (s *checkedStore) Series(ctx context.Context, metric, arm string, f Filter) ([]SeriesPoint, error) {
	return checkedPoints(ctx, s, metric, arm, f, s.Store.Series)
}

func (s *checkedStore) Effects(ctx context.Context, metric, arm string, f Filter) ([]EffectPoint, error) {
	return checkedPoints(ctx, s, metric, arm, f, s.Store.Effects)
}

// checkedPoints reads one metric of one arm through read (the store's
// Series or Effects), refusing an arm no run ran and, when nothing comes
// back, a metric that is neither known nor stored.
func checkedPoints[P any](ctx context.Context, s *checkedStore, metric, arm string, f Filter,
	read func(context.Context, string, string, Filter) ([]P, error)) ([]P, error) {
	if err := s.checkArm(ctx, arm, f); err != nil {
		return nil, err
	}
	pts, err := read(ctx, metric, arm, f)
	if err == nil && len(pts) == 0 && !slices.Contains(s.known, metric) {
		return nil, s.unknownMetric(metric)
	}
	return pts, err
}

// CheckNames refuses arms no run ran and metrics that are neither among
// known nor stored in any of the runs (for reads that take whole runs, as
// an export does). Errors wrap ErrUnknown.
func CheckNames(runs []Run, arms, metrics, known []string) error {
	var haveArms []string
	stored := map[string]bool{}
	for _, r := range runs {
		for _, a := range r.Arms {
			haveArms = append(haveArms, a.Name)
		}
		for _, t := range r.Trials {
			haveArms = append(haveArms, t.Arm)
			for m := range t.Metrics {
				stored[m] = true
			}
		}
		for _, e := range r.Effects {
			stored[e.Metric] = true
		}
	}
	for _, a := range arms {
		if !slices.Contains(haveArms, a) {
			return fmt.Errorf("arm %q %w (%s)", a, ErrUnknown, holding("arms", haveArms))
		}
	}
	for _, m := range metrics {
		if !stored[m] && !slices.Contains(known, m) {
			return unknownMetric(m, known)
		}
	}
	return nil
}
