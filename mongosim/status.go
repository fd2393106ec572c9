package mongosim

import (
	"os"
	"runtime"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// StatusSection produces one top-level serverStatus section.
type StatusSection struct {
	Name string
	Fn   func() any
}

// AddStatusSection plugs a section into serverStatus (the model adds
// queues, queryMemory, metrics and tcmalloc this way).
func (s *Server) AddStatusSection(sec StatusSection) {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	s.sections = append(s.sections, sec)
}

func (s *Server) cmdServerStatus(r *request) (bson.D, error) {
	now := time.Now()
	host, _ := os.Hostname()
	up := now.Sub(s.started)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	conns := s.conns.current()
	d := bson.D{
		{Key: "host", Value: host + ":" + itoa(int64(s.portNumber()))},
		{Key: "version", Value: Version},
		{Key: "process", Value: "mongod"},
		{Key: "pid", Value: int64(os.Getpid())},
		{Key: "uptime", Value: float64(int64(up / time.Second))},
		{Key: "uptimeMillis", Value: int64(up / time.Millisecond)},
		{Key: "uptimeEstimate", Value: int64(up / time.Second)},
		{Key: "localTime", Value: now},
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(conns)}, {Key: "available", Value: int32(s.limits.MaxIncomingConnections - conns)},
			{Key: "totalCreated", Value: int32(s.conns.totalCreated())}, {Key: "rejected", Value: int32(s.conns.totalRejected())},
			{Key: "active", Value: int32(len(s.ops.snapshot()))}}},
		{Key: "opcounters", Value: bson.D{
			{Key: "insert", Value: s.counters.insert.Load()}, {Key: "query", Value: s.counters.query.Load()},
			{Key: "update", Value: s.counters.update.Load()}, {Key: "delete", Value: s.counters.delete.Load()},
			{Key: "getmore", Value: s.counters.getmore.Load()}, {Key: "command", Value: s.counters.command.Load()}}},
		{Key: "mem", Value: bson.D{{Key: "bits", Value: int32(64)}, {Key: "resident", Value: s.residentMB()},
			{Key: "virtual", Value: s.residentMB() + int32(ms.Sys>>20)}, {Key: "supported", Value: true}}},
		{Key: "metrics", Value: bson.D{{Key: "cursor", Value: bson.D{{Key: "open", Value: bson.D{{Key: "total", Value: int64(s.cursor.count())}}}}},
			{Key: "query", Value: s.spillCounters()}}},
	}
	if !s.standalone() {
		hello := s.helloReply(&request{conn: r.conn, name: "hello", body: r.body})
		repl := bson.D{}
		for _, e := range hello {
			switch e.Key {
			case "topologyVersion", "hosts", "setName", "setVersion", "isWritablePrimary", "secondary", "primary", "me", "electionId", "lastWrite", "isreplicaset", "info":
				repl = append(repl, e)
			}
		}
		repl = append(repl, bson.E{Key: "rbid", Value: int32(1)})
		d = append(d, bson.E{Key: "repl", Value: repl})
	}
	s.statusMu.Lock()
	sections := append([]StatusSection(nil), s.sections...)
	s.statusMu.Unlock()
	for _, sec := range sections {
		d = setOrAppend(d, sec.Name, sec.Fn())
	}
	if !slices.ContainsFunc(d, func(e bson.E) bool { return e.Key == "mongosim" }) {
		d = append(d, bson.E{Key: "mongosim", Value: simulatedSection()})
	}
	return omit(d, s.opts.Sim.OmitStatusSections), nil
}

func setOrAppend(d bson.D, key string, v any) bson.D {
	for i := range d {
		if d[i].Key == key {
			d[i].Value = v
			return d
		}
	}
	return append(d, bson.E{Key: key, Value: v})
}
