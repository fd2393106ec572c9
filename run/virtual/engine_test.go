package virtual

import (
	"context"
	"reflect"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
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

// TestCalibrationShape runs the sweeper investigation's A/B on the model (5 seeds per arm)
// and checks the shape its mechanisms produce.
func TestCalibrationShape(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration matrix")
	}
	trials, err := RunMatrix(context.Background(), DefaultConfig(1), builtins(t, "A", "D", "E", "F"), 5)
	if err != nil {
		t.Fatal(err)
	}
	hw := DefaultConfig(1).Hardware
	for _, tr := range trials {
		m := tr.Metrics
		switch tr.Arm {
		case "A": // no shedding: the storm OOM-kills primary after primary
			if m[metric.Restarts] < 1 || m[metric.Failovers] < 1 || m[metric.Availability] > 0.75 {
				t.Errorf("A seed %d: %v; want crash-looping", tr.Seed, m)
			}
		case "D", "F": // the actor / the sweeper remove queued memory
			if m[metric.Failovers] != 0 || m[metric.Restarts] != 0 || m[metric.Availability] < 0.9 {
				t.Errorf("%s seed %d: %v; want the investigation's parity", tr.Arm, tr.Seed, m)
			}
			if m[metric.KillsPerS] == 0 {
				t.Errorf("%s seed %d: no low-priority departure without a ticket; queued ops must be removed", tr.Arm, tr.Seed)
			}
			if m[metric.RSSPeakBytes] >= float64(hw.MemLimitBytes*3/4) {
				t.Errorf("%s seed %d: peak RSS %v too close to the limit", tr.Arm, tr.Seed, m[metric.RSSPeakBytes])
			}
		case "E": // the inline shedder: departures are admissions only
			if m[metric.KillsPerS] != 0 {
				t.Errorf("E seed %d: %v low-priority kills/s; the inline shedder cannot reach queued ops", tr.Seed, m[metric.KillsPerS])
			}
			if m[metric.ShedsPerS] == 0 {
				t.Errorf("E seed %d: the inline shedder never shed", tr.Seed)
			}
		}
		if med := m[metric.ReadTicketsMed]; tr.Arm != "A" && (med < 8 || med > 20) {
			t.Errorf("%s seed %d: median read tickets %.0f in the storm; want probing down from 128 to 8-20", tr.Arm, tr.Seed, med)
		}
	}
	// Victim populations of D and E are alike (the investigation's control).
	victims := func(s Summary) float64 { return s.Metrics[metric.VictimTrackedP50] }
	d, e := Over(trials, "D", victims), Over(trials, "E", victims)
	if r := d.Median / e.Median; r < 0.67 || r > 1.5 {
		t.Errorf("victim tracked p50: D %.0f vs E %.0f bytes; want alike", d.Median, e.Median)
	}
	// F's signature: the low-priority queue does not keep growing.
	if s := Over(trials, "F", func(s Summary) float64 { return s.Metrics[metric.LowQueueSlope] }); s.Max > 5 {
		t.Errorf("F low-priority queue grows %.1f ops/s over the storm; want bounded", s.Max)
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
	if p50, ok := metric.Summarize(x.Records)[metric.CanaryP50Ms]; !ok || p50 <= 0 {
		t.Errorf("canary p50 %v ms (present %v): want a positive latency", p50, ok)
	}
}
