package arms

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/internal/mongouri"
)

// Differences says how arm given differs from arm recorded as a run
// would run them: one "field: recorded X, given Y" per difference in
// build, target, mongod, uri (both redacted: credentials are not part of
// an arm's definition), topology, a sharded cluster's size, each server
// parameter and the actors. The description is not compared (it changes
// nothing that runs). Both arms are compared in the form an arms file
// gives them (Marshal, then Parse), so defaults written out and defaults
// left implicit compare equal. Empty means the arms run alike.
func Differences(recorded, given Arm) ([]string, error) {
	r, err := canonical(recorded)
	if err != nil {
		return nil, fmt.Errorf("arm %s as recorded: %w", recorded.Name, err)
	}
	g, err := canonical(given)
	if err != nil {
		return nil, fmt.Errorf("arm %s as given: %w", given.Name, err)
	}
	var out []string
	field := func(name, rv, gv string) {
		if rv != gv {
			out = append(out, fmt.Sprintf("%s: recorded %s, given %s", name, orNone(rv), orNone(gv)))
		}
	}
	field("build", r.Build, g.Build)
	field("target", r.Target, g.Target)
	field("mongod", r.Mongod, g.Mongod)
	field("uri", r.URI, g.URI)
	field("topology", topologyOf(r), topologyOf(g))
	if r.IsSharded() && g.IsSharded() {
		field("sharded", fmt.Sprintf("%+v", r.Sharded), fmt.Sprintf("%+v", g.Sharded))
	}
	for _, k := range slices.Sorted(maps.Keys(union(r.SetParameters, g.SetParameters))) {
		rv, rok := r.SetParameters[k]
		gv, gok := g.SetParameters[k]
		if rok != gok || rv != gv {
			field("setParameters."+k, valueOrUnset(rv, rok), valueOrUnset(gv, gok))
		}
	}
	field("actors", describeActors(r.Actors), describeActors(g.Actors))
	return out, nil
}

// NeedsCredentials reports whether an arm as a manifest records it
// (Redacted) lacks what it needs to connect: its uri had credentials,
// which were redacted, so only the arms file it came from can give them.
func NeedsCredentials(recorded Arm) bool {
	return strings.Contains(recorded.URI, mongouri.Redacted) || strings.Contains(recorded.URI, unparseableURI)
}

// canonical is an arm as an arms file gives it back: redacted, its
// defaults filled in by Parse.
func canonical(a Arm) (Arm, error) {
	b, err := Marshal([]Arm{a})
	if err != nil {
		return Arm{}, err
	}
	list, err := Parse(a.Name, b)
	if err != nil {
		return Arm{}, err
	}
	return list[0], nil
}

func topologyOf(a Arm) string {
	if a.Topology == "" {
		return TopologyReplicaSet
	}
	return a.Topology
}

func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

func valueOrUnset(v string, ok bool) string {
	if !ok {
		return "(unset)"
	}
	return fmt.Sprintf("%q", v)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// describeActors is an arm's actors in one line. An exec actor's
// environment shows its keys and a digest of its values, which may be
// secrets.
func describeActors(list []Actor) string {
	var out []string
	for _, act := range list {
		switch {
		case act.KillOp != nil:
			k := act.KillOp
			out = append(out, fmt.Sprintf("killop{rssHighPercent: %g, interval: %s, appName: %q, anyApp: %t, maxKillsPerRound: %d, policy: %s}",
				k.RSSHighPercent, k.Interval, k.AppName, k.AnyApp, k.MaxKillsPerRound, k.Policy))
		case act.Exec != nil:
			keys := slices.Sorted(maps.Keys(act.Exec.Env))
			h := sha256.New()
			for _, k := range keys {
				fmt.Fprintf(h, "%q=%q\n", k, act.Exec.Env[k])
			}
			out = append(out, fmt.Sprintf("exec{command: %q, env: %v (values digest %.8x)}", act.Exec.Command, keys, h.Sum(nil)))
		}
	}
	return strings.Join(out, ", ")
}
