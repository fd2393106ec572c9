package collect

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
	"github.com/qmlsab/qmlsab/store"
)

// FTDC is one member's diagnostic data (mongod's diagnostic.data) read
// into samples through the same extractor table as live samples: what a
// member recorded about itself about once a second, including the seconds
// a sampler could not reach it.
type FTDC struct {
	// Member is the member's name: the one given to ReadFTDC, else the
	// name its replica set knows it by (replSetGetStatus's self member),
	// else serverStatus.host, else the source path.
	Member string
	// Samples are Up, in time order, each marked FromFTDC. Primary comes
	// from serverStatus.repl (isWritablePrimary) or replSetGetStatus
	// (myState 1); a member with neither (a standalone) is writable.
	// ProcessID is the chunk's serverStatus.repl.topologyVersion.processId
	// (a chunk never spans two processes), so a restart shows as a new
	// process, as well as by uptimeMillis going backwards. SeenPrimary is
	// the member replSetGetStatus showed in state PRIMARY: a secondary's
	// record of a primary that was killed before its own diagnostic data
	// reached the disk.
	Samples []store.Sample
	// Simulated: mongosim wrote it (its buildInfo or serverStatus says so).
	Simulated bool
	// First and Last are the times of the first and last samples read
	// (in the window or not).
	First, Last time.Time
	// Torn are documents cut short by the end of their file (a process
	// killed mid-write); everything before them was read.
	Torn error
}

// ReadFTDC reads one member's diagnostic data (a diagnostic.data directory
// or FTDC files) into samples, keeping those whose time keep accepts (nil:
// all). member names the member ("" to take the name from the data).
// Samples of metrics.interim already archived are read once. Errors name
// the file and offset; a torn last document is not an error (FTDC.Torn).
func ReadFTDC(member string, keep func(time.Time) bool, sources ...string) (*FTDC, error) {
	r, err := ftdc.Open(sources...)
	if err != nil {
		return nil, fmt.Errorf("diagnostic data %v: %w", sources, err)
	}
	defer r.Close()
	out := &FTDC{Member: member}
	var torn []error
	last := int64(0)
	setName := false // out.Member is the name the replica set knows
	for {
		d, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ftdc.IsTruncated(err) {
				torn = append(torn, err)
				continue
			}
			return nil, err
		}
		switch d.Type {
		case ftdc.TypeMetadata:
			if sim, _ := d.Doc.Lookup("buildInfo", "mongosim", "simulated").BooleanOK(); sim {
				out.Simulated = true
			}
			continue
		case ftdc.TypeMetricChunk:
		default:
			continue
		}
		c, err := d.Chunk()
		if err != nil {
			return nil, err
		}
		name, named, pid, sim := chunkIdentity(c.Reference)
		states := memberStates(c)
		out.Simulated = out.Simulated || sim
		if member == "" && (out.Member == "" || named && !setName) {
			out.Member, setName = name, named
		}
		for _, s := range c.Samples() {
			t := s.Time()
			if t <= last {
				continue // an interim chunk already archived
			}
			last = t
			at := time.UnixMilli(t)
			if out.First.IsZero() {
				out.First = at
			}
			out.Last = at
			if keep != nil && !keep(at) {
				continue
			}
			smp := ftdcSample(c, s, at, pid)
			smp.SeenPrimary = states.primary(s)
			out.Samples = append(out.Samples, smp)
		}
	}
	if out.Member == "" && len(sources) > 0 {
		out.Member = filepath.Clean(sources[0])
	}
	for i := range out.Samples {
		out.Samples[i].Member = out.Member
	}
	out.Torn = errors.Join(torn...)
	return out, nil
}

// ftdcSample is one FTDC sample as a store.Sample.
func ftdcSample(c *ftdc.Chunk, s ftdc.Sample, at time.Time, pid string) store.Sample {
	values := ExtractWith(func(source, path string) (float64, bool) {
		col, ok := c.Lookup(source + "." + path)
		if !ok {
			return 0, false
		}
		return float64(s.At(col)), true
	})
	primary := true // a standalone is writable
	if v, ok := values["repl.isWritablePrimary"]; ok {
		primary = v == 1
	} else if v, ok := values["repl.myState"]; ok {
		primary = v == 1
	}
	return store.Sample{At: at, Up: true, Primary: primary, ProcessID: pid, Values: values, FromFTDC: true}
}

// chunkIdentity reads who wrote a chunk from its reference sample: the
// member's name (named: as its replica set knows it), its process id and
// whether it is mongosim.
func chunkIdentity(ref bson.Raw) (name string, named bool, pid string, simulated bool) {
	ref = readable(ref)
	if members, ok := ref.Lookup(ReplSetGetStatus, "members").ArrayOK(); ok {
		vals, _ := members.Values()
		for _, v := range vals {
			m, ok := v.DocumentOK()
			if !ok {
				continue
			}
			if self, _ := m.Lookup("self").BooleanOK(); self {
				name, _ = m.Lookup("name").StringValueOK()
			}
		}
	}
	named = name != ""
	if !named {
		name, _ = ref.Lookup(ServerStatus, "host").StringValueOK()
	}
	if id, ok := ref.Lookup(ServerStatus, "repl", "topologyVersion", "processId").ObjectIDOK(); ok {
		pid = id.Hex()
	}
	simulated, _ = ref.Lookup(ServerStatus, "mongosim", "simulated").BooleanOK()
	return name, named, pid, simulated
}

// memberStateColumns are the columns of a chunk's
// replSetGetStatus.members.<i>.state with the members' names, which the
// reference sample holds (the config, and so the names by index, never
// changes within a chunk: a change of shape starts a new one).
type memberStateColumns []struct {
	name   string
	column int
}

func memberStates(c *ftdc.Chunk) memberStateColumns {
	members, ok := readable(c.Reference).Lookup(ReplSetGetStatus, "members").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := members.Values()
	var out memberStateColumns
	for i, v := range vals {
		m, ok := v.DocumentOK()
		if !ok {
			continue
		}
		name, _ := m.Lookup("name").StringValueOK()
		col, ok := c.Lookup(fmt.Sprintf("%s.members.%d.state", ReplSetGetStatus, i))
		if name != "" && ok {
			out = append(out, struct {
				name   string
				column int
			}{name, col})
		}
	}
	return out
}

// statePrimary is replSetGetStatus's member state of a primary.
const statePrimary = 1

// primary is the member a sample shows in state PRIMARY (the first, when
// a stale view shows two), "" for none.
func (m memberStateColumns) primary(s ftdc.Sample) string {
	for _, c := range m {
		if s.At(c.column) == statePrimary {
			return c.name
		}
	}
	return ""
}

// Window is a ReadFTDC filter keeping the times in [from, to).
func Window(from, to time.Time) func(time.Time) bool {
	return func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
}
