package virtual

import (
	"context"
	"reflect"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/investigation"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/mongosim/model"
)

func builtins(t *testing.T, names ...string) []arms.Arm {
	var out []arms.Arm
	for _, n := range names {
		a, ok := arms.Lookup(n)
		if !ok {
			t.Fatalf("no built-in arm %s", n)
		}
		out = append(out, a)
	}
	return out
}

func TestTrialIsDeterministicForASeed(t *testing.T) {
	a := builtins(t, "F")[0]
	ctx := context.Background()
	cfg := DefaultConfig(7)
	x, err := Run(ctx, cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := Run(ctx, cfg, a)
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("same seed, different trials:\n%+v\n%+v", x.Tally, y.Tally)
	}
	cfg.Seed = 8
	z, _ := Run(ctx, cfg, a)
	if reflect.DeepEqual(x.Tally, z.Tally) {
		t.Fatal("different seeds gave identical trials")
	}
}

// TestCalibrationShape runs the sweeper investigation's A/B on the
// embedded default (5 seeds per arm) and checks issue 19's acceptance: D
// matches each of its observations within tolerance and holds, E falls
// (crash-looping, departures = admissions, arrivals ≥ 30 % above
// admissions while its queue grows), master's formula (M) holds E up, no
// shedding (A) crash-loops, and the sweeper (F) holds as its mechanism
// says it should.
func TestCalibrationShape(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration matrix")
	}
	trials, err := RunMatrix(context.Background(), DefaultConfig(1), builtins(t, "A", "D", "E", "M", "F"), 5)
	if err != nil {
		t.Fatal(err)
	}
	of := func(arm string) []investigation.Trial {
		var out []investigation.Trial
		for _, tr := range trials {
			if tr.Arm == arm {
				out = append(out, tr.Metrics)
			}
		}
		return out
	}
	for _, o := range investigation.Observations {
		v := o.Value(of(o.Arm))
		if r := o.Residual(v); !o.Matches(r) {
			t.Errorf("%s: %s simulated against %s observed (residual %+.2f, tolerance ±%.2f)", o.Name, o.FormatValue(v), o.Observed, r, o.Tol)
		}
	}
	if !investigation.Holds(of("D")) || !investigation.Holds(of("F")) || !investigation.Holds(of("M")) {
		t.Errorf("D, F and M must hold (availability > 0.9, no failover): D %v F %v M %v", investigation.Holds(of("D")), investigation.Holds(of("F")), investigation.Holds(of("M")))
	}
	if !investigation.Falls(of("E")) || !investigation.Falls(of("A")) {
		t.Errorf("E and A must fall (crash-looping): E %v A %v", investigation.Falls(of("E")), investigation.Falls(of("A")))
	}
	for _, tr := range trials {
		m := tr.Metrics
		switch tr.Arm {
		case "D":
			if m[metric.Failovers] != 0 || m[metric.Restarts] != 0 {
				t.Errorf("D seed %d: %v failovers, %v restarts; want none in any trial", tr.Seed, m[metric.Failovers], m[metric.Restarts])
			}
		case "E":
			if m[metric.KillsPerS] != 0 {
				t.Errorf("E seed %d: %v low-priority kills/s; the inline shedder cannot reach queued ops", tr.Seed, m[metric.KillsPerS])
			}
			if arr, adm := m[investigation.GrowthArrivalsPerS], m[investigation.GrowthAdmissionsPerS]; !(arr >= 1.3*adm) {
				t.Errorf("E seed %d: %.0f arrivals/s against %.0f admissions/s while the queue grows; want ≥ 30 %% more", tr.Seed, arr, adm)
			}
		case "M": // master's odds term kills new aggregates young: arrivals fall
			if m[investigation.GrowthArrivalsPerS] >= 1.3*m[investigation.GrowthAdmissionsPerS] {
				t.Errorf("M seed %d: arrivals %.0f/s vs admissions %.0f/s while growing; master's formula should throttle arrivals", tr.Seed,
					m[investigation.GrowthArrivalsPerS], m[investigation.GrowthAdmissionsPerS])
			}
		}
	}
	// Victim populations of D and E are alike (the investigation's control).
	victims := func(s Summary) float64 { return s.Metrics[metric.VictimTrackedP50] }
	d, e := Over(trials, "D", victims), Over(trials, "E", victims)
	if r := d.Median / e.Median; r < 0.67 || r > 1.5 {
		t.Errorf("victim tracked p50: D %.0f vs E %.0f bytes; want alike", d.Median, e.Median)
	}
}

// An operation is served from the moment it arrives: even a canary on an
// idle member takes at least a tick, and its latency is measured from its
// scheduled start (the members once worked a tick ahead of arrivals, so
// every canary answered in 0 ms).
func TestEveryOperationTakesModelTime(t *testing.T) {
	cfg := DefaultConfig(3)
	x, err := Run(context.Background(), cfg, builtins(t, "E")[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Records.Canaries) == 0 || len(x.Records.Storm) == 0 {
		t.Fatalf("%d canaries, %d storm ops", len(x.Records.Canaries), len(x.Records.Storm))
	}
	for _, c := range x.Records.Canaries {
		if c.Code == "" && c.Latency < model.Tick {
			t.Fatalf("canary scheduled at %v answered in %v, less than one model tick", c.Scheduled, c.Latency)
		}
	}
	for _, o := range x.Records.Storm {
		if o.Code == "" && o.Latency < model.Tick {
			t.Fatalf("storm op answered in %v, less than one model tick", o.Latency)
		}
	}
	// E's median canary may be one the client gave up on (a lower bound):
	// a latency all the same.
	e := metric.Evaluate(x.Records)
	p50, ok := e.Values[metric.CanaryP50Ms]
	if !ok {
		p50, ok = e.AtLeast[metric.CanaryP50Ms]
	}
	if !ok || p50 <= 0 {
		t.Errorf("canary p50 %v ms (present %v): want a positive latency", p50, ok)
	}
}
