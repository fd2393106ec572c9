package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/internal/chart"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// The per-shard panels of a storm run on a sharded cluster. Each shard has
// its own primary, with its own tickets, queue, memory and shedder: one
// panel per shard draws that shard's primary, one line per trial, and a
// panel for the routers draws what a router reports of the same (a router
// has no storage admission, no memory model and no shedder; what it does
// not report is "–" with the reason, never a line of zeros).

// shardedMeta is what a sharded trial's metadata says of its topology.
type shardedMeta struct {
	Topology string   `json:"topology"`
	Routers  []string `json:"routers"`
}

// readShards splits a sharded trial's samples by shard into per-second
// series (d.shards); a trial on a replica set is left as it is.
func (d *trialData) readShards() error {
	var m shardedMeta
	if len(d.Metadata) == 0 || json.Unmarshal(d.Metadata, &m) != nil || m.Topology != "sharded" {
		return nil
	}
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(d.Dir, store.SamplesFile))
	if err != nil {
		return err
	}
	byShard := map[string][]store.Sample{}
	for _, s := range samples {
		if s.Shard == "" {
			continue
		}
		if slices.Contains(m.Routers, s.Member) {
			// A router is never a primary; its series is its own
			// samples', read as a one-member deployment's.
			s.Primary = s.Up
			if !slices.Contains(d.routers, s.Shard) {
				d.routers = append(d.routers, s.Shard)
			}
		}
		byShard[s.Shard] = append(byShard[s.Shard], s)
	}
	d.shards, d.shardSamples = map[string][]store.Second{}, byShard
	end := d.Started.Add(time.Duration(d.length * float64(time.Second)))
	for id, ss := range byShard {
		d.shards[id] = metric.PerSecond(ss, d.Started, end)
	}
	return nil
}

// queriesPerSecond is a shard's (or the routers') opcounters.query rate
// in each second of the trial, summed over its members while primary (a
// router's samples count as its own primary's): the storm's aggregations
// and the canaries' finds as each node counted them.
func (d *trialData) queriesPerSecond(shard string) [][2]float64 {
	perSec := map[int]float64{}
	for _, p := range metric.PrimaryRates(d.shardSamples[shard], store.FieldOpcountersQuery) {
		if x := d.rel(p.Mid()); x >= 0 && x < d.length {
			perSec[int(x)] += p.Value
		}
	}
	var out [][2]float64
	for t, v := range perSec {
		out = append(out, [2]float64{float64(t), v})
	}
	slices.SortFunc(out, func(a, b [2]float64) int { return int(a[0] - b[0]) })
	return out
}

// shardPanel is one time series of a shard's panel.
type shardPanel struct {
	key, title, unit string
	// scale turns the series' unit into the chart's.
	scale float64
	field func(store.Second) *float64
	// routerWhy is why a router has none of it, when it reports none.
	routerWhy string
}

// shardPanels are the per-shard series: the sweeper investigation's
// tickets, queue, memory and sheds, on each shard's primary.
var shardPanels = []shardPanel{
	{"tickets", "read tickets", unitTickets, 1, func(s store.Second) *float64 { return s.ReadTix },
		"a router has no queues.execution section: storage admission is a shard's"},
	{"queue", "low-priority read queue", unitQueuedOps, 1, func(s store.Second) *float64 { return s.LowQueue },
		"a router has no queues.execution section: storage admission is a shard's"},
	{"rss", "resident memory", unitGiB, 1.0 / 1024, func(s store.Second) *float64 { return s.ResidentMB },
		"the router reported no mem.resident"},
	{"sheds", "server sheds per second", unitOpsPerS, 1, func(s store.Second) *float64 { return s.Sheds },
		"a router has no queryMemory section: it sheds nothing"},
	{"actor-kills", "killOp actor kills per second", unitOpsPerS, 1, nil,
		"the killOp actor kills on the shards, never on a router"},
	{"queries", "queries per second (opcounters.query)", unitOpsPerS, 1, nil,
		"the router reported no opcounters"},
}

// series is a panel's points for one trial on one shard (actor kills:
// the shard's own actor's).
func (p shardPanel) series(d *trialData, shard string, router bool) [][2]float64 {
	ss := d.shards[shard]
	switch {
	case p.field != nil:
		return gaugeOf(ss, p.field, p.scale)
	case p.key == "queries":
		return d.queriesPerSecond(shard)
	}
	if router {
		return nil
	}
	return d.actorKillsOf(func(k *store.Kill) bool { return k.Shard == shard })
}

// shardSections are a panel per shard and one for the routers, then a
// table of every shard's and router's figures per arm.
func shardSections(a *Analysis, data []*trialData, options map[string]chart.Option, color func(string) string) []section {
	var shards, routers []string
	for _, d := range data {
		for id := range d.shards {
			switch {
			case slices.Contains(d.routers, id):
				if !slices.Contains(routers, id) {
					routers = append(routers, id)
				}
			case !slices.Contains(shards, id):
				shards = append(shards, id)
			}
		}
	}
	slices.Sort(shards)
	slices.Sort(routers)
	sharded := slices.DeleteFunc(slices.Clone(data), func(d *trialData) bool { return d.shards == nil })
	var secs []section
	for _, id := range append(slices.Clone(shards), routers...) {
		router := slices.Contains(routers, id)
		var refs []chartRef
		var notes []string
		for _, p := range shardPanels {
			who := "the primary of shard " + id
			if router {
				who = "the router"
			}
			line, none := trialLines(fmt.Sprintf("%s: %s", capitalize(who), p.title), p.unit, sharded,
				func(d *trialData) [][2]float64 { return p.series(d, id, router) }, color, !router)
			if len(line.Series) == 0 {
				why := strings.TrimPrefix(noDataWhy("ts-"+p.key), ": ")
				if router {
					why = p.routerWhy
				}
				notes = append(notes, fmt.Sprintf("%s: – (%s)", p.title, why))
				continue
			}
			if len(none) > 0 {
				notes = append(notes, fmt.Sprintf("%s: no data for %s", p.title, strings.Join(none, ", ")))
			}
			if p.key == "rss" && !router {
				addMemoryMarks(&line, shardOnly(sharded, id))
			}
			chartID := "shard-" + id + "-" + p.key
			options[chartID] = line
			refs = append(refs, chartRef{chartID})
		}
		sec := section{ID: "shard-" + id, Title: "Shard " + id + " (its primary, one line per trial)", Charts: refs,
			Note: "The storm's aggregations went through the router to every shard that owns the collection's chunks; each shard admits, queues and sheds them with its own execution control and memory."}
		if router {
			sec.Title = "Router " + id + " (one line per trial)"
			sec.Note = "The router passes the storm on to the shards; its own operations are never shed."
		}
		if len(notes) > 0 {
			sec.Note += " " + strings.Join(notes, "; ") + "."
		}
		secs = append(secs, sec)
	}
	secs = append(secs, section{ID: "shards", Title: "Per shard: medians of the storm's seconds, by arm",
		Note:  "Each shard's primary and each router, over the valid trials of an arm: the median of the storm phase's per-second read tickets and queue length, the peak resident memory, and the median over trials of the server's sheds, of the killOp actor's kills (never added together) and of queries counted, in the storm. – is what a node did not report (hover for why).",
		Table: shardTable(a, sharded, shards, routers)})
	return secs
}

// shardOnly is each trial's data with one shard's series as its own, for
// the helpers that read a trial's series (the memory marks).
func shardOnly(data []*trialData, shard string) []*trialData {
	out := make([]*trialData, 0, len(data))
	for _, d := range data {
		c := *d
		c.series = d.shards[shard]
		out = append(out, &c)
	}
	return out
}

// shardTable is the per-shard table: a row per shard or router and arm.
func shardTable(a *Analysis, data []*trialData, shards, routers []string) template.HTML {
	var b strings.Builder
	b.WriteString(`<table class="data"><tr><th>node</th><th>arm</th><th>trials</th><th>read tickets (median)</th><th>low-priority queue (median)</th><th>resident peak (GiB)</th><th>server sheds in the storm (median per trial)</th><th>actor kills in the storm (median per trial)</th><th>queries in the storm (median per trial)</th></tr>`)
	absent := func(why string) string {
		return `<span title="` + template.HTMLEscapeString(why) + `">–</span>`
	}
	for _, id := range append(slices.Clone(shards), routers...) {
		router := slices.Contains(routers, id)
		node := "shard " + id
		if router {
			node = "router " + id
		}
		for _, arm := range a.In.Arms {
			var trials []*trialData
			for _, d := range data {
				if d.Arm == arm {
					trials = append(trials, d)
				}
			}
			if len(trials) == 0 {
				continue
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%d</td>", template.HTMLEscapeString(node), template.HTMLEscapeString(arm), len(trials))
			for _, p := range shardPanels {
				var pooled, perTrial []float64
				for _, d := range trials {
					storm, recovery := d.Phases[store.PhaseStorm], d.Phases[store.PhaseRecovery]
					total, seen := 0.0, false
					for _, pt := range p.series(d, id, router) {
						if pt[0] < storm || pt[0] >= recovery {
							continue
						}
						pooled, total, seen = append(pooled, pt[1]), total+pt[1], true
					}
					if seen {
						perTrial = append(perTrial, total)
					}
				}
				why := strings.TrimPrefix(noDataWhy("ts-"+p.key), ": ")
				if router {
					why = p.routerWhy
				}
				switch {
				case len(pooled) == 0:
					b.WriteString("<td>" + absent("not reported: "+why) + "</td>")
				case p.key == "rss":
					fmt.Fprintf(&b, "<td>%.2f</td>", slices.Max(pooled))
				case p.key == "sheds" || p.key == "actor-kills" || p.key == "queries":
					fmt.Fprintf(&b, "<td>%s</td>", metric.Number(math.Round(metric.Median(perTrial))))
				default:
					fmt.Fprintf(&b, "<td>%s</td>", metric.Number(metric.Median(pooled)))
				}
			}
			b.WriteString("</tr>")
		}
	}
	b.WriteString("</table>")
	return template.HTML(b.String())
}

// capitalize is s with its first letter upper case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
