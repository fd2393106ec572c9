package calibrate

import (
	"reflect"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
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
	x, err := Run(DefaultConfig(7), a)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := Run(DefaultConfig(7), a)
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("same seed, different trials:\n%+v\n%+v", x.Metrics, y.Metrics)
	}
	z, _ := Run(DefaultConfig(8), a)
	if reflect.DeepEqual(x.Metrics, z.Metrics) {
		t.Fatal("different seeds gave identical trials")
	}
}

// TestCalibrationShape runs the A/B of seed 000 on the model (5 seeds per
// arm) and checks the shape its mechanisms produce.
func TestCalibrationShape(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration matrix")
	}
	trials, err := RunMatrix(DefaultConfig(1), builtins(t, "A", "D", "E", "F"), 5)
	if err != nil {
		t.Fatal(err)
	}
	hw := DefaultConfig(1).Hardware
	for _, tr := range trials {
		m := tr.Metrics
		switch tr.Arm {
		case "A": // no shedding: the storm OOM-kills primary after primary
			if m.Restarts < 1 || m.Failovers < 1 || m.Availability > 0.75 {
				t.Errorf("A seed %d: restarts %d failovers %d availability %.2f; want crash-looping", tr.Seed, m.Restarts, m.Failovers, m.Availability)
			}
		case "D", "F": // the actor / the sweeper remove queued memory
			if m.Failovers != 0 || m.Restarts != 0 || m.Availability < 0.9 {
				t.Errorf("%s seed %d: failovers %d restarts %d availability %.2f; want the seed's parity", tr.Arm, tr.Seed, m.Failovers, m.Restarts, m.Availability)
			}
			if m.LowKills == 0 {
				t.Errorf("%s seed %d: no low-priority departure without a ticket; queued ops must be removed", tr.Arm, tr.Seed)
			}
			if m.RSSPeakBytes >= hw.MemLimitBytes*3/4 {
				t.Errorf("%s seed %d: peak RSS %d too close to the limit", tr.Arm, tr.Seed, m.RSSPeakBytes)
			}
		case "E": // the inline shedder: departures are admissions only
			if m.LowKills != 0 {
				t.Errorf("E seed %d: %d low-priority kills; the inline shedder cannot reach queued ops", tr.Seed, m.LowKills)
			}
			if m.ServerSheds == 0 {
				t.Errorf("E seed %d: the inline shedder never shed", tr.Seed)
			}
		}
		if tr.Arm != "A" && (m.ReadTicketsMedian < 8 || m.ReadTicketsMedian > 20) {
			t.Errorf("%s seed %d: median read tickets %.0f in the storm; want probing down from 128 to 8-20", tr.Arm, tr.Seed, m.ReadTicketsMedian)
		}
	}
	// Victim populations of D and E are alike (the seed's control).
	d := Summarize(trials, "D", func(m Metrics) float64 { return float64(m.VictimTrackedP50) })
	e := Summarize(trials, "E", func(m Metrics) float64 { return float64(m.VictimTrackedP50) })
	if r := d.Median / e.Median; r < 0.67 || r > 1.5 {
		t.Errorf("victim tracked p50: D %.0f vs E %.0f bytes; want alike", d.Median, e.Median)
	}
	// F's signature: queued ops are shed (operationsShedQueued > 0) and the
	// low-priority queue does not keep growing.
	if s := Summarize(trials, "F", func(m Metrics) float64 { return m.LowQueueSlope }); s.Max > 5 {
		t.Errorf("F low-priority queue grows %.1f ops/s over the storm; want bounded", s.Max)
	}
}
