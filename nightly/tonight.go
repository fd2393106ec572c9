package nightly

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	ms "github.com/aclements/go-moremath/stats"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/report"
)

// Names of the checks a finding comes from.
const (
	// CheckTonight is the per-night check: the newest night's trials
	// against the pooled trials of the stable nights before it.
	CheckTonight = "tonight"
	// CheckChangePoint is E-Divisive over every night of a series.
	CheckChangePoint = "change point"
)

// Defaults of the per-night check.
const (
	DefaultBaselineNights = 7
	DefaultAlpha          = 0.05
	// DefaultMinShift is the smallest Hodges-Lehmann shift, relative to
	// the baseline's median, that fails the night: below it a shift is
	// noise-level on a tight metric however small its p.
	DefaultMinShift = 0.05
)

// TonightOptions tune the per-night check.
type TonightOptions struct {
	// Off skips the check (E-Divisive alone decides).
	Off bool
	// BaselineNights is K, how many stable nights before the newest are
	// pooled into the baseline (default DefaultBaselineNights).
	BaselineNights int
	// Alpha is the family-wise level over every (arm, metric) pair
	// tested on the night (Holm's step-down; default DefaultAlpha).
	Alpha float64
	// MinShift is the smallest relative shift that fails the night
	// (default DefaultMinShift; negative means none).
	MinShift float64
}

func (o TonightOptions) withDefaults() TonightOptions {
	if o.BaselineNights <= 0 {
		o.BaselineNights = DefaultBaselineNights
	}
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultAlpha
	}
	if o.MinShift == 0 {
		o.MinShift = DefaultMinShift
	}
	return o
}

// Finding is the per-night check's verdict on one (arm, metric) pair:
// the newest night against its baseline.
type Finding struct {
	Check  string `json:"check"` // CheckTonight
	Metric string `json:"metric"`
	Arm    string `json:"arm"`
	// Night is the newest night's number (1-based, as the history lists
	// it), RunID its run.
	Night   int       `json:"night"`
	RunID   string    `json:"runId"`
	Started time.Time `json:"started"`
	// Median is the newest night's median, BaselineMedian the pooled
	// baseline trials' median.
	Median         float64 `json:"median"`
	BaselineMedian float64 `json:"baselineMedian"`
	// Shift is the Hodges-Lehmann shift from the baseline to the newest
	// night, in the metric's unit.
	Shift float64 `json:"shift"`
	// Relative is |Shift| / |BaselineMedian|; +Inf when the baseline
	// median is 0 and the shift is not.
	Relative float64 `json:"relative"`
	// P is the exact one-sided Mann-Whitney U p-value in the metric's
	// worse direction; Threshold is the Holm level it was held to.
	P         float64 `json:"p"`
	Threshold float64 `json:"threshold"`
	// Trials and BaselineTrials count the values on either side;
	// BaselineNights lists the runs pooled into the baseline, oldest first.
	Trials         int      `json:"trials"`
	BaselineTrials int      `json:"baselineTrials"`
	BaselineNights []string `json:"baselineNights"`
	// Regression: p below the threshold, the shift worse and at least
	// the minimum size. Only such findings are kept in a Result.
	Regression bool `json:"regression"`
	// Redefined is the definition change the newest night made to the arm
	// (Redefinition.Describe), when its baseline is the nights of the
	// arm's previous definition: the finding is that change's.
	Redefined string `json:"redefined,omitempty"`
}

// Tonight is the per-night check's part of a Result.
type Tonight struct {
	// RunID is the newest night the check looked at ("" when the
	// history is empty or the check is off), Night its number (1-based).
	RunID string `json:"runId,omitempty"`
	Night int    `json:"night"`
	// Redefined says what the newest night changed in the definitions it
	// compares (Redefinition.Describe), if anything.
	Redefined string `json:"redefined,omitempty"`
	// Tested is the family: pairs with a baseline and not every value
	// equal (such a pair cannot show anything). Alpha is split over it.
	Tested int `json:"tested"`
	// Untested counts the pairs the newest night ran that have no
	// baseline yet, and Unbased says why (the first night of the history
	// or of its workload, a workload changed tonight).
	Untested int      `json:"untested"`
	Unbased  []string `json:"unbased,omitempty"`
	// NoData lists the arms the newest night ran with no valid trial:
	// such a night cannot be judged, and never passes (Result.NoData).
	NoData         []string `json:"noData,omitempty"`
	Alpha          float64  `json:"alpha"`
	MinShift       float64  `json:"minShift"`
	BaselineNights int      `json:"baselineNights"`
	// Findings are the pairs that fail the night.
	Findings []Finding `json:"findings"`
}

// tonightOf is tonight's check of one series (one arm's trial values of
// one metric per night, the newest last): the newest night against the
// last K nights of its baseline. The baseline is the newest night's
// segment (seg) after the latest change point E-Divisive confirmed in it
// (segCPs, by segment); on a night that redefined the arm alone it is the
// previous definition's segment, and the finding says so. ok is false
// when the pair cannot be tested: no worse direction, every value equal,
// or no baseline (why says which).
func tonightOf(m, arm string, nights [][]float64, ids []string, at []time.Time, seg segmentation, segCPs [][]int, k int) (f Finding, ok bool, why string) {
	newest := len(nights) - 1
	if metric.Lookup(m).Better == 0 {
		return Finding{}, false, ""
	}
	sg := seg.seg[newest]
	b := seg.at[sg]
	redefined := ""
	if seg.first[sg] == newest {
		switch {
		case b.first && newest == 0:
			return Finding{}, false, "the first night"
		case b.first:
			return Finding{}, false, "the first night of its workload"
		case !b.redefinedArmsOnly():
			return Finding{}, false, "the workload changed tonight: " + strings.Join(b.workload, ", ")
		}
		redefined = b.text()
		sg = seg.prev[sg]
	}
	var base []int
	for _, i := range seg.points(sg) {
		if i < newest {
			base = append(base, i)
		}
	}
	for _, cp := range segCPs[sg] {
		// Nights before a confirmed change are another regime.
		base = slices.DeleteFunc(base, func(i int) bool { return cp < newest && i < cp })
	}
	if len(base) > k {
		base = base[len(base)-k:]
	}
	if len(base) == 0 {
		return Finding{}, false, "no earlier night of its definition"
	}
	f, ok = tonightCandidate(m, arm, nights[newest], pick(nights, base), pick(ids, base), ids[newest], at[newest])
	f.Redefined = redefined
	return f, ok, ""
}

// tonightCandidate tests tonight's values of one metric of one arm
// against the baseline nights' values. ok is false when the pair cannot
// be tested: no worse direction, or every value equal.
func tonightCandidate(m, arm string, tonight []float64, baseNights [][]float64, baseIDs []string, runID string, started time.Time) (Finding, bool) {
	better := metric.Lookup(m).Better
	base := flatten(baseNights)
	if better == 0 || len(base) == 0 || len(tonight) == 0 {
		return Finding{}, false
	}
	alt := ms.LocationGreater // lower is better: worse is tonight greater
	if better > 0 {
		alt = ms.LocationLess
	}
	r, err := ms.MannWhitneyUTest(tonight, base, alt)
	if errors.Is(err, ms.ErrSamplesEqual) {
		return Finding{}, false
	}
	if err != nil {
		return Finding{}, false
	}
	f := Finding{Check: CheckTonight, Metric: m, Arm: arm, RunID: runID, Started: started,
		Median: metric.Median(tonight), BaselineMedian: metric.Median(base),
		Shift: report.HodgesLehmann(base, tonight), P: r.P, Trials: len(tonight), BaselineTrials: len(base),
		BaselineNights: slices.Clone(baseIDs)}
	switch {
	case f.BaselineMedian != 0:
		f.Relative = math.Abs(f.Shift) / math.Abs(f.BaselineMedian)
	case f.Shift != 0:
		f.Relative = math.Inf(1)
	}
	return f, true
}

// holm holds the candidates to Holm's step-down at alpha over the whole
// family and keeps those that are regressions of at least minShift.
func holm(cands []Finding, alpha, minShift float64) []Finding {
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].P < cands[j].P })
	var out []Finding
	for i := range cands {
		c := &cands[i]
		c.Threshold = alpha / float64(len(cands)-i)
		if !(c.P < c.Threshold) {
			break // step-down: every larger p is kept as well
		}
		worse := c.Shift*float64(metric.Lookup(c.Metric).Better) < 0
		if worse && c.Relative >= minShift {
			c.Regression = true
			out = append(out, *c)
		}
	}
	return out
}
