package virtual

import (
	"context"
	"fmt"
	"reflect"
	"strings"
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

// TestCalibrationIsHonest runs the sweeper investigation's arms on the
// embedded default (3 seeds each) and checks that the calibration table
// says what the trials did, whatever they did: each observation is
// "yes" exactly when its residual is within its tolerance, figures the
// investigation gives are compared, and the mechanisms hold that do not
// depend on the fit — the inline shedder never reaches a queued
// operation (E has no queue kills), D's server sheds nothing (its actor
// kills), and F's sweeper sheds queued operations. Since spill I/O is
// conserved the model no longer reproduces the investigation (its E does
// not crash-loop): this test holds the table to the truth, not the model
// to the investigation (docs/investigations.md has the residuals).
func TestCalibrationIsHonest(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration matrix")
	}
	trials, err := RunMatrix(context.Background(), DefaultConfig(1), builtins(t, "D", "E", "F"), 3)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	WriteResiduals(&out, trials)
	text := out.String()
	of := func(arm string) []investigation.Trial {
		var ts []investigation.Trial
		for _, tr := range trials {
			if tr.Arm == arm {
				ts = append(ts, tr.Metrics)
			}
		}
		return ts
	}
	for _, o := range investigation.Observations {
		v := o.Value(of(o.Arm))
		r := o.Residual(v)
		want := "NO"
		if o.Matches(r) {
			want = "yes"
		}
		line := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, o.Name+" ") && line == "" {
				line = l
			}
		}
		if f := strings.Fields(line); len(f) == 0 || f[len(f)-1] != want || !strings.Contains(line, fmt.Sprintf("%+.2f", r)) {
			t.Errorf("%s: residual %+.2f (tolerance ±%.2f) should read %q; the table says %q", o.Name, r, o.Tol, want, line)
		}
	}
	for _, tr := range trials {
		m := tr.Metrics
		switch tr.Arm {
		case "D":
			if m[metric.ServerShedsPerS] != 0 || m[metric.ActorKillsPerS] <= 0 {
				t.Errorf("D seed %d: server sheds/s %v, actor kills/s %v; its server sheds nothing, its actor kills", tr.Seed, m[metric.ServerShedsPerS], m[metric.ActorKillsPerS])
			}
		case "E":
			if m[metric.KillsPerS] != 0 {
				t.Errorf("E seed %d: %v low-priority kills/s; the inline shedder cannot reach queued ops", tr.Seed, m[metric.KillsPerS])
			}
		case "F":
			if m[metric.ServerShedsQueuedPerS] <= 0 {
				t.Errorf("F seed %d: the sweeper shed no queued operation", tr.Seed)
			}
		}
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

// crashLoops is a storm heavy enough that E (and A) crash-loop in the
// model: 300 queries/s from clients holding up to 3,000 connections to a
// member. At the embedded default (the refit's nearest point to the
// sweeper investigation) no arm OOM-restarts, so tests of what happens
// across a failover run this one.
func crashLoops(seed uint64) Config {
	c := DefaultConfig(seed)
	c.Workload.StormRate, c.Workload.MaxPoolSize = 300, 3000
	return c
}
