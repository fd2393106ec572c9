package investigation

import (
	"math"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/metric"
)

func trials(avail []float64, failovers, restarts float64) []Trial {
	var out []Trial
	for _, a := range avail {
		out = append(out, Trial{metric.Availability: a, metric.Failovers: failovers, metric.Restarts: restarts})
	}
	return out
}

// Holds and falls are the investigation's outcomes: one failover breaks
// "holds"; "falls" needs the crash loop in every trial, not on average.
func TestHoldsAndFalls(t *testing.T) {
	if !Holds(trials([]float64{0.95, 0.97, 0.99}, 0, 0)) || Holds(trials([]float64{0.95, 0.97, 0.99}, 1, 0)) || Holds(trials([]float64{0.8, 0.85, 0.99}, 0, 0)) {
		t.Error("holds: median availability > 0.9 and no failover in any trial")
	}
	e := trials([]float64{0.38, 0.40, 0.41}, 13, 13)
	if !Falls(e) {
		t.Error("E's crash loop does not fall")
	}
	e[1][metric.Restarts] = 0
	if Falls(e) {
		t.Error("a trial without an OOM restart still counted as falling")
	}
	if Holds(nil) || Falls(nil) {
		t.Error("no trials neither hold nor fall")
	}
}

func TestObservationValuesAndResiduals(t *testing.T) {
	ts := []Trial{{metric.Failovers: 3, GrowthArrivalsPerS: 280}, {metric.Failovers: 1}, {metric.Failovers: 2, GrowthArrivalsPerS: 260}}
	fewest := Observation{Metric: metric.Failovers, Reduce: Min, Lo: 1, Hi: math.Inf(1), Tol: 0.5}
	if v := fewest.Value(ts); v != 1 || fewest.Residual(v) != 0 {
		t.Errorf("fewest failovers %v residual %v", v, fewest.Residual(v))
	}
	arr := Observation{Metric: GrowthArrivalsPerS, Lo: 270, Hi: 270, Tol: 0.25}
	if v := arr.Value(ts); v != 270 {
		t.Errorf("median of the trials that have the figure: %v, want 270 (a trial without it is left out)", v)
	}
	if v := (Observation{Metric: "nothing"}).Value(ts); !math.IsNaN(v) || (Observation{Metric: "nothing"}).Residual(v) != -1 || (Observation{Format: "%.0f"}).FormatValue(v) != "–" {
		t.Error("an absent figure is NaN, a residual of −1 and printed –")
	}
	for _, o := range Observations {
		if o.Arm != "D" && o.Arm != "E" {
			t.Errorf("%s: observations are of D and E only (F is predicted), got %q", o.Name, o.Arm)
		}
	}
}

func TestFAcceptanceSaysWhatItCompared(t *testing.T) {
	f := []Trial{{metric.Availability: 1, metric.Failovers: 0, metric.LowQueueGrowth: 1, metric.ServerShedsPerS: 169, metric.AdmissionsPerS: 147}}
	want := []bool{true, true, false, true}
	for i, c := range FAcceptance {
		met, what := c.Met(f)
		if met != want[i] || !strings.Contains(what, "want") {
			t.Errorf("%s: met %v (%s), want %v", c.Name, met, what, want[i])
		}
	}
	if _, what := FAcceptance[2].Met(f); what != "lowpri_queue_sustained_growth max = 1, want == 0" {
		t.Errorf("queue line %q", what)
	}
}
