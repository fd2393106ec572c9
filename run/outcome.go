package run

import (
	"fmt"
	"strings"

	"github.com/qmlsab/qmlsab/store"
)

// Outcome is a run folder as an invocation left it.
type Outcome struct {
	// Run is the folder's manifest and finished trials: those a resume
	// read, and those this invocation wrote, as it wrote them (the folder
	// is not read back).
	Run *store.Run
}

// MeasuredNothing is the verdict on a run whose every finished trial is
// invalid: it measured nothing, which is a failure, not a result. The
// error lists the first invalid trials' reasons; nil when a trial is
// valid or none finished.
func (o *Outcome) MeasuredNothing() error {
	t := o.Run.Manifest.Tally()
	if t.Invalid == 0 || t.Invalid != t.Finished {
		return nil
	}
	return fmt.Errorf("every trial of the run is invalid, so it measured nothing:\n  %s", strings.Join(t.Reasons, "\n  "))
}

// Stopped is a run that stopped before its plan was done: interrupted
// (its context ended), or because its results disk failed (Err). The
// trials it finished are intact; Resume completes the run in Dir.
type Stopped struct {
	Dir         string
	Interrupted bool
	Err         error
}

func (s *Stopped) Error() string {
	if s.Err != nil {
		return fmt.Sprintf("the run stopped: %v (finished trials are intact; the trials it could not write are left to run again: once the results disk is fixed, resume the run in %s)", s.Err, s.Dir)
	}
	return fmt.Sprintf("interrupted; finished trials are kept: resume the run in %s", s.Dir)
}

func (s *Stopped) Unwrap() error { return s.Err }
