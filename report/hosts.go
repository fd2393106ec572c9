package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/qmlsab/qmlsab/internal/units"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// HostStats are one host's share of the trials: how many valid trials of
// each arm it ran and their medians.
type HostStats struct {
	Host store.Host
	// Label names the host in tables: its hostname, with its ID when
	// two hosts share a hostname.
	Label string
	N     map[string]int
	// Medians are by arm, then metric.
	Medians map[string]map[string]float64
}

// StratifiedComparison is an arm against the baseline on one metric with
// the hosts as strata, beside the pooled comparison.
type StratifiedComparison struct {
	Metric, Base, Arm string
	// Strata are the hosts that ran trials of both arms.
	Strata int
	// Z and P are van Elteren's statistic and two-sided p (VanElteren).
	Z, P float64
	// Delta is the Hodges-Lehmann shift within hosts
	// (StratifiedHodgesLehmann).
	Delta       float64
	Alpha       float64
	Significant bool
	// PooledP and PooledDelta are the pooled comparison's (Compare).
	PooledP, PooledDelta float64
	PooledSignificant    bool
}

// analyzeHosts fills a.Hosts and a.Stratified when the valid trials ran
// on more than one host: a host's offset moves every arm it ran and can
// hide an arm's effect in the pooled test, or make one.
func (a *Analysis) analyzeHosts() {
	in := a.In
	byHost := map[string]map[string][]Trial{} // host → arm → valid trials
	var hosts []store.Host
	for _, h := range in.Hosts {
		for _, arm := range in.Arms {
			for _, t := range in.Valid(arm) {
				if t.Host != h.ID {
					continue
				}
				if byHost[h.ID] == nil {
					byHost[h.ID] = map[string][]Trial{}
					hosts = append(hosts, h)
				}
				byHost[h.ID][arm] = append(byHost[h.ID][arm], t)
			}
		}
	}
	if len(hosts) < 2 {
		return
	}
	names := map[string]int{}
	for _, h := range hosts {
		names[h.Hostname]++
	}
	var labels []string
	for _, h := range hosts {
		hs := HostStats{Host: h, Label: h.Hostname, N: map[string]int{}, Medians: map[string]map[string]float64{}}
		if hs.Label == "" || names[h.Hostname] > 1 {
			hs.Label = strings.TrimSpace(h.Hostname + " " + h.ID[:min(6, len(h.ID))])
		}
		for _, arm := range in.Arms {
			ts := byHost[h.ID][arm]
			hs.N[arm] = len(ts)
			if len(ts) == 0 {
				continue
			}
			hs.Medians[arm] = map[string]float64{}
			for _, m := range a.MetricNames {
				if v := metricValues(ts, m); len(v) > 0 {
					hs.Medians[arm][m] = metric.Median(v)
				}
			}
		}
		a.Hosts = append(a.Hosts, hs)
		labels = append(labels, hs.Label)
	}
	a.Warnings = append(a.Warnings, Warning{Text: fmt.Sprintf("the trials ran on %d hosts (%s): per-host medians and a test stratified by host (van Elteren) are beside the pooled test in the Hosts section",
		len(hosts), strings.Join(labels, ", "))})
	for _, arm := range in.Arms {
		if arm == a.Baseline {
			continue
		}
		for _, m := range a.MetricNames {
			var strata []Stratum
			for _, h := range hosts {
				strata = append(strata, Stratum{Base: metricValues(byHost[h.ID][a.Baseline], m), Arm: metricValues(byHost[h.ID][arm], m)})
			}
			z, p, used := VanElteren(strata)
			if used == 0 {
				continue
			}
			sc := StratifiedComparison{Metric: m, Base: a.Baseline, Arm: arm, Strata: used, Z: z, P: p, Delta: StratifiedHodgesLehmann(strata),
				Alpha: a.Alpha, Significant: p <= a.Alpha, PooledP: math.NaN(), PooledDelta: math.NaN()}
			if c, ok := a.Comparison(arm, m); ok {
				sc.PooledP, sc.PooledDelta, sc.PooledSignificant = c.P, c.Delta, c.Significant
			}
			a.Stratified = append(a.Stratified, sc)
		}
	}
}

// Stratification finds an arm's host-stratified comparison on a metric.
func (a *Analysis) Stratification(arm, metric string) (StratifiedComparison, bool) {
	for _, s := range a.Stratified {
		if s.Arm == arm && s.Metric == metric {
			return s, true
		}
	}
	return StratifiedComparison{}, false
}

// metricValues are a metric's values over trials that have it.
func metricValues(ts []Trial, metric string) []float64 {
	var v []float64
	for _, t := range ts {
		if x, ok := t.Metrics[metric]; ok {
			v = append(v, x)
		}
	}
	return v
}

// hostLine describes a host's machine in one line.
func hostLine(h store.Host) string {
	var parts []string
	if h.CPUModel != "" {
		parts = append(parts, h.CPUModel)
	}
	if h.Cores > 0 {
		parts = append(parts, fmt.Sprintf("%d cores", h.Cores))
	}
	if h.MemoryBytes > 0 {
		parts = append(parts, units.HumanBytes(float64(h.MemoryBytes)))
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if h.Target != "" {
		parts = append(parts, "target "+h.Target)
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// formatShift is "+3.1 % (p = 0.002)", or "~ (p = 0.410)" when not
// significant, for a stratified or a pooled result of metric m.
func formatShift(m string, delta, p, baseMedian float64, significant bool) string {
	switch {
	case math.IsNaN(p):
		return "n/a"
	case !significant:
		return fmt.Sprintf("~ (%s)", PValue(p))
	case baseMedian != 0 && !math.IsNaN(delta):
		pct := 100 * delta / math.Abs(baseMedian)
		return fmt.Sprintf("%s %% (%s)", signed(pct, metric.Number(math.Abs(pct))), PValue(p))
	}
	return fmt.Sprintf("%s (%s)", signed(delta, metric.Format(m, math.Abs(delta))), PValue(p))
}

// baseMedian is the baseline's median of a metric (NaN when absent).
func (a *Analysis) baseMedian(metric string) float64 {
	if arm := a.Arm(a.Baseline); arm != nil {
		if s, ok := arm.Metrics[metric]; ok {
			return s.Median
		}
	}
	return math.NaN()
}

// hostSection is the report page's Hosts section: which hosts ran how
// many trials of each arm, per-host medians of the key metrics, and each
// comparison stratified by host beside the pooled one. Nil for one host.
func hostSection(a *Analysis) *section {
	if len(a.Hosts) < 2 {
		return nil
	}
	esc := template.HTMLEscapeString
	var b strings.Builder
	b.WriteString(`<table class="data" id="hosts-table"><tr><th>host</th><th style="text-align:left">machine</th>`)
	for _, arm := range a.In.Arms {
		fmt.Fprintf(&b, "<th>%s trials</th>", esc(arm))
	}
	b.WriteString("</tr>")
	for _, h := range a.Hosts {
		fmt.Fprintf(&b, `<tr><td>%s<br><span class="small">%s</span></td><td style="text-align:left">%s</td>`, esc(h.Label), esc(h.Host.ID), esc(hostLine(h.Host)))
		for _, arm := range a.In.Arms {
			fmt.Fprintf(&b, "<td>%d</td>", h.N[arm])
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	b.WriteString(`<h3>Per-host medians</h3><table class="data" id="host-medians"><tr><th>metric</th><th>host</th>`)
	for _, arm := range a.In.Arms {
		fmt.Fprintf(&b, "<th>%s</th>", esc(arm))
	}
	b.WriteString("</tr>")
	for _, m := range keyMetrics(a) {
		for i, h := range a.Hosts {
			title := ""
			if i == 0 {
				title = esc(metricTitle(m))
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td>", title, esc(h.Label))
			for _, arm := range a.In.Arms {
				cell := "–"
				if v, ok := h.Medians[arm][m]; ok {
					cell = fmt.Sprintf("%s <span class=\"small\">n=%d</span>", esc(metric.Format(m, v)), h.N[arm])
				}
				fmt.Fprintf(&b, "<td>%s</td>", cell)
			}
			b.WriteString("</tr>")
		}
	}
	b.WriteString("</table>")
	fmt.Fprintf(&b, `<h3>Pooled vs stratified by host (against %s)</h3><table class="data" id="stratified-table"><tr><th>metric</th><th>arm</th><th>pooled: Δ (exact U p)</th><th>within hosts: Δ (van Elteren p)</th><th>hosts</th></tr>`, esc(a.Baseline))
	for _, m := range keyMetrics(a) {
		for _, arm := range a.In.Arms {
			s, ok := a.Stratification(arm, m)
			if !ok {
				continue
			}
			bm := a.baseMedian(m)
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td class="%s">%s</td><td class="%s">%s</td><td>%d</td></tr>`, esc(metricTitle(m)), esc(arm),
				sigClass(s.PooledSignificant), esc(formatShift(m, s.PooledDelta, s.PooledP, bm, s.PooledSignificant)),
				sigClass(s.Significant), esc(formatShift(m, s.Delta, s.P, bm, s.Significant)), s.Strata)
		}
	}
	b.WriteString("</table>")
	return &section{ID: "hosts", Title: fmt.Sprintf("Hosts: the trials ran on %d machines", len(a.Hosts)),
		Note: "Each repetition block (every arm once) ran on one host, so a host's speed moves all arms alike. The pooled test compares all trials at once, " +
			"where differences between hosts add to the noise (or, with unequal arms per host, fake an effect); the stratified test ranks each arm's trials " +
			"only against the other arm's trials on the same host (van Elteren's weighted sum of per-host Wilcoxon rank sums, normal approximation), " +
			"and its Δ is the median of within-host differences (Hodges-Lehmann within host blocks).",
		Table: template.HTML(b.String())}
}

func sigClass(significant bool) string {
	if significant {
		return "sig"
	}
	return "ns"
}

// hostMarkdown is the Markdown summary's host part (nil for one host).
func hostMarkdown(a *Analysis) []byte {
	if len(a.Hosts) < 2 {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n**The trials ran on %d hosts.** Per-host medians, and each arm against %s pooled (exact U) and stratified by host (van Elteren, Δ within hosts):\n\n", len(a.Hosts), md(a.Baseline))
	fmt.Fprint(&b, "| metric | host |")
	for _, arm := range a.In.Arms {
		fmt.Fprintf(&b, " %s |", md(arm))
	}
	fmt.Fprint(&b, "\n|---|---|")
	for range a.In.Arms {
		fmt.Fprint(&b, "---|")
	}
	fmt.Fprintln(&b)
	for _, m := range keyMetrics(a) {
		for _, h := range a.Hosts {
			fmt.Fprintf(&b, "| %s | %s |", md(metricTitle(m)), md(h.Label))
			for _, arm := range a.In.Arms {
				if v, ok := h.Medians[arm][m]; ok {
					fmt.Fprintf(&b, " %s (n=%d) |", md(metric.Format(m, v)), h.N[arm])
				} else {
					fmt.Fprint(&b, " – |")
				}
			}
			fmt.Fprintln(&b)
		}
	}
	fmt.Fprint(&b, "\n| metric | arm | pooled | within hosts | hosts |\n|---|---|---|---|---|\n")
	for _, m := range keyMetrics(a) {
		for _, arm := range a.In.Arms {
			if s, ok := a.Stratification(arm, m); ok {
				bm := a.baseMedian(m)
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", md(metricTitle(m)), md(arm), md(formatShift(m, s.PooledDelta, s.PooledP, bm, s.PooledSignificant)),
					md(formatShift(m, s.Delta, s.P, bm, s.Significant)), s.Strata)
			}
		}
	}
	return b.Bytes()
}

func metricTitle(name string) string { return metric.Lookup(name).Title }

type summaryHost struct {
	store.Host
	Label   string                           `json:"label"`
	Trials  map[string]int                   `json:"trials"`
	Medians map[string]map[string]jsonNumber `json:"medians"`
}

type summaryStratComparison struct {
	Metric      string     `json:"metric"`
	Base        string     `json:"base"`
	Arm         string     `json:"arm"`
	Hosts       int        `json:"hosts"`
	Z           jsonNumber `json:"z"`
	P           jsonNumber `json:"p"`
	Delta       jsonNumber `json:"delta"`
	Significant bool       `json:"significant"`
	PooledP     jsonNumber `json:"pooledP"`
	PooledDelta jsonNumber `json:"pooledDelta"`
}

// summaryHosts are summary.json's hosts: every host that ran valid
// trials, with its trials and medians per arm (empty for one host).
func summaryHosts(a *Analysis) []summaryHost {
	out := []summaryHost{}
	for _, h := range a.Hosts {
		sh := summaryHost{Host: h.Host, Label: h.Label, Trials: h.N, Medians: map[string]map[string]jsonNumber{}}
		for arm, ms := range h.Medians {
			sh.Medians[arm] = map[string]jsonNumber{}
			for m, v := range ms {
				sh.Medians[arm][m] = jsonNumber(v)
			}
		}
		out = append(out, sh)
	}
	return out
}

// summaryStratified are summary.json's host-stratified comparisons.
func summaryStratified(a *Analysis) []summaryStratComparison {
	out := []summaryStratComparison{}
	for _, s := range a.Stratified {
		out = append(out, summaryStratComparison{Metric: s.Metric, Base: s.Base, Arm: s.Arm, Hosts: s.Strata, Z: jsonNumber(s.Z), P: jsonNumber(s.P),
			Delta: jsonNumber(s.Delta), Significant: s.Significant, PooledP: jsonNumber(s.PooledP), PooledDelta: jsonNumber(s.PooledDelta)})
	}
	return out
}
