package run

import (
	"context"
	"errors"
	"testing"

	"github.com/qmlsab/qmlsab/internal/field"
)

// trialRun is an experiment a test runs: its spec, how, and where.
type trialRun struct {
	Spec
	Exec
	Dir string
}

// experiment builds r's experiment, failing t when it is refused.
func (r trialRun) experiment(t *testing.T) Experiment {
	t.Helper()
	e, err := NewExperiment(r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run carries r's experiment out into r.Dir, failing t when the
// experiment is refused (a run's own refusals and failures are returned).
func (r trialRun) run(t *testing.T, ctx context.Context) (*Outcome, error) {
	t.Helper()
	return Run(ctx, r.experiment(t), r.Dir, r.Exec)
}

// resume completes the run in r.Dir with r's execution options.
func (r trialRun) resume(ctx context.Context, g Given) (*Outcome, error) {
	return Resume(ctx, r.Dir, r.Exec, g)
}

// isField reports whether err is a field.Error about f.
func isField(err error, f string) bool {
	var fe *field.Error
	return errors.As(err, &fe) && fe.Field == f
}
