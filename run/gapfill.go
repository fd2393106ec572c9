package run

import (
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
)

// Gap filling. The sampler asks each member for serverStatus over the
// wire once a second; a member that is dying, hung, restarting or slow to
// be reconnected to costs a second without a sample. Every member also
// records serverStatus about once a second into its own diagnostic.data
// (FTDC), on disk, including the seconds before an OOM kill. After a
// wall-clock trial on a target whose members keep diagnostic data in a
// dbpath the harness can read (the local target), each member-second in
// the trial without an answered sample gets the member's own samples of
// that second, marked Sample.FromFTDC (and the per-second series' second
// store.Second.FTDC when the primary's values came from them).

// diagnosticData is a deployment whose members' diagnostic.data the
// harness can read: member host:port → directory.
type diagnosticData interface {
	DiagnosticData() map[string]string
}

// fillGaps returns samples with the seconds of the trial the sampler
// missed filled from each member's diagnostic data, when the deployment
// has it; else samples unchanged. It reads what is on disk while the
// members still run: the archive files and the interim file, which a
// member rewrites every ten samples, so the trial's last few seconds may
// not be there yet (the seconds before a kill are, up to the last
// rewrite, as with mongod).
func (x *execution) fillGaps(dep target.Deployment, start time.Time, samples []store.Sample) []store.Sample {
	dd, ok := dep.(diagnosticData)
	if !ok {
		return samples
	}
	total := x.exp.workload.Duration()
	members := dep.Members()
	before := unobservedSeconds(samples, members, start, total)
	out := slices.Clone(samples)
	for _, member := range members {
		dir := dd.DiagnosticData()[member]
		if dir == "" {
			continue
		}
		f, err := collect.ReadFTDC(member, collect.Window(start, start.Add(total)), dir)
		if err != nil {
			x.exec.Log.Warn("diagnostic data unreadable; its gaps stay unfilled", "member", member, "err", err)
			continue
		}
		seen := observed(samples, member, start)
		for _, s := range f.Samples {
			if !seen[second(s.At, start)] {
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b store.Sample) int { return a.At.Compare(b.At) })
	x.exec.Log.Info("gaps filled from diagnostic data", "unobservedMemberSeconds", before,
		"afterFilling", unobservedSeconds(out, members, start, total))
	return out
}

func second(at, start time.Time) int { return int(at.Sub(start) / time.Second) }

// observed are the seconds of the trial in which a member answered.
func observed(samples []store.Sample, member string, start time.Time) map[int]bool {
	out := map[int]bool{}
	for _, s := range samples {
		if s.Member == member && s.Up && !s.At.Before(start) {
			out[second(s.At, start)] = true
		}
	}
	return out
}

// unobservedSeconds counts the member-seconds of a trial of length total
// with no sample of an answering member.
func unobservedSeconds(samples []store.Sample, members []string, start time.Time, total time.Duration) int {
	n := 0
	secs := int((total + time.Second - 1) / time.Second)
	for _, m := range members {
		seen := observed(samples, m, start)
		for i := range secs {
			if !seen[i] {
				n++
			}
		}
	}
	return n
}
