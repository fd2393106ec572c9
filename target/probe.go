package target

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
)

// Need is one thing the collectors or the arm's actors read from the
// server, and whether the provisioning probe found it.
type Need struct {
	Name string `json:"name"`
	// Absent is why the server cannot provide it; empty when it can.
	Absent string `json:"absent,omitempty"`
	// Detail qualifies a present need (how many of a section's fields).
	Detail string `json:"detail,omitempty"`
	// Actor marks a need of the arm's killOp actor: the arm is refused
	// without it.
	Actor bool `json:"actor,omitempty"`
}

// Capabilities is the provisioning probe's answer for one deployment:
// every need, in a fixed order, each measured or absent with its reason.
type Capabilities struct {
	Needs []Need `json:"needs"`
}

// Table is the probe as one table for a person (stderr), mongostat style:
// one line per need.
func (c Capabilities) Table() string {
	w := len("need")
	for _, n := range c.Needs {
		w = max(w, len(n.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %s\n", w, "need", "status")
	for _, n := range c.Needs {
		status := "measured"
		if n.Absent != "" {
			status = "absent: " + n.Absent
		} else if n.Detail != "" {
			status += " (" + n.Detail + ")"
		}
		fmt.Fprintf(&b, "%-*s  %s\n", w, n.Name, status)
	}
	return b.String()
}

// Missing are the needs the probe found absent.
func (c Capabilities) Missing() []Need {
	var out []Need
	for _, n := range c.Needs {
		if n.Absent != "" {
			out = append(out, n)
		}
	}
	return out
}

// sectionOf is the provisioning table's row a collector field belongs to:
// its serverStatus section (the top-level field of its first path), or
// replSetGetStatus as a whole.
func sectionOf(f collect.Field) string {
	if f.Source == collect.ReplSetGetStatus {
		return collect.ReplSetGetStatus
	}
	top, _, _ := strings.Cut(f.Paths[0], ".")
	return collect.ServerStatus + " " + top
}

// parentOf is the document a dotted path's value sits in ("mem" for
// "mem.resident"), or the path itself at the top level.
func parentOf(path string) string {
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i]
	}
	return path
}

// probeMember asks one member for everything the collectors and the arm's
// actors read. A command that fails, or a section a reply lacks, is an
// absent need with the server's reason; the probe itself fails only when
// the member does not answer serverStatus at all.
func probeMember(ctx context.Context, c *mongo.Client, host string, replicated bool, arm arms.Arm) (Capabilities, error) {
	admin := c.Database("admin")
	ss, err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		return Capabilities{}, fmt.Errorf("member %s: serverStatus: %w", host, err)
	}
	var rs bson.Raw
	var rsErr error
	if replicated {
		rs, rsErr = admin.RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Raw()
	}
	docs := map[string]bson.Raw{collect.ServerStatus: ss, collect.ReplSetGetStatus: rs}
	var caps Capabilities
	// One row per section of the collector table, in its order.
	type section struct {
		source      string
		fields, got int
		parents     []string
	}
	var order []string
	sections := map[string]*section{}
	for _, f := range collect.Fields {
		name := sectionOf(f)
		src := cmp.Or(f.Source, collect.ServerStatus)
		s := sections[name]
		if s == nil {
			s = &section{source: src}
			sections[name] = s
			order = append(order, name)
		}
		s.fields++
		for _, p := range f.Paths {
			if parent := parentOf(p); !slices.Contains(s.parents, parent) {
				s.parents = append(s.parents, parent)
			}
		}
		get := collect.DocLookup(src, docs[src])
		if slices.ContainsFunc(f.Paths, func(p string) bool { _, ok := get(src, p); return ok }) {
			s.got++
		}
	}
	for _, name := range order {
		s := sections[name]
		n := Need{Name: name}
		switch {
		case !replicated && (s.source == collect.ReplSetGetStatus || name == collect.ServerStatus+" repl"):
			n.Absent = "standalone: no replication"
		case s.source == collect.ReplSetGetStatus && rsErr != nil:
			n.Absent = "replSetGetStatus failed: " + rsErr.Error()
		case s.got == 0:
			n.Absent = "the reply has no " + strings.Join(s.parents, " nor ")
		case s.got < s.fields:
			n.Detail = fmt.Sprintf("%d of %d fields", s.got, s.fields)
		}
		caps.Needs = append(caps.Needs, n)
	}
	killOpActor := arm.KillOp() != nil
	// $currentOp: the census of every sample and the killOp actor's view.
	cur := Need{Name: "aggregate $currentOp", Actor: killOpActor}
	if err := admin.RunCommand(ctx, bson.D{{Key: "aggregate", Value: 1},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}, bson.D{{Key: "$limit", Value: 1}}}},
		{Key: "cursor", Value: bson.D{}}}).Err(); err != nil {
		cur.Absent = err.Error()
	}
	caps.Needs = append(caps.Needs, cur)
	if killOpActor {
		// An operation id no server hands out: killOp of an unknown
		// operation succeeds on mongod, so only a server without the
		// command (or one that refuses it) answers an error.
		kill := Need{Name: "killOp", Actor: true}
		if err := admin.RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: int32(-1 << 30)}}).Err(); err != nil {
			kill.Absent = err.Error()
		}
		mem := Need{Name: "hostInfo system.memLimitMB/memSizeMB", Actor: true}
		if hi, err := admin.RunCommand(ctx, bson.D{{Key: "hostInfo", Value: 1}}).Raw(); err != nil {
			mem.Absent = "hostInfo failed: " + err.Error()
		} else if mb, ok := actor.MemoryLimitMB(hi); !ok {
			mem.Absent = "neither system.memLimitMB nor system.memSizeMB is a positive number"
		} else {
			mem.Detail = fmt.Sprintf("%d MiB", mb) // mongod's "MB" fields count mebibytes
		}
		caps.Needs = append(caps.Needs, kill, mem)
	}
	return caps, nil
}

// from names the member in each absent need's reason.
func (c Capabilities) from(host string) Capabilities {
	out := Capabilities{Needs: slices.Clone(c.Needs)}
	for i := range out.Needs {
		if out.Needs[i].Absent != "" {
			out.Needs[i].Absent = "member " + host + ": " + out.Needs[i].Absent
		}
	}
	return out
}

// merge combines members' probes: a need is measured when every member
// has it, else absent with the first lacking member's reason.
func (c Capabilities) merge(other Capabilities) Capabilities {
	if len(c.Needs) == 0 {
		return other
	}
	for i := range c.Needs {
		if i < len(other.Needs) && c.Needs[i].Absent == "" && other.Needs[i].Absent != "" {
			c.Needs[i].Absent = other.Needs[i].Absent
			c.Needs[i].Detail = ""
		}
	}
	return c
}

// refuseActor is the error for an arm whose killOp actor needs what the
// server lacks, or nil.
func refuseActor(arm arms.Arm, server string, c Capabilities) error {
	var missing []string
	for _, n := range c.Missing() {
		if n.Actor {
			missing = append(missing, n.Name+" ("+n.Absent+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("arm %s has the killOp actor, which needs what %s lacks: %s", arm.Name, server, strings.Join(missing, "; "))
}
