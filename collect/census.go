package collect

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// CensusOp is what the census reads of one operation in $currentOp.
type CensusOp struct {
	Queued       bool   // currentQueue is non-null: waiting for a ticket
	TrackedBytes int64  // inUseTrackedMemBytes
	Stage        string // the pipeline's blocking stage, when reported
}

// Census fields are stored in a store.Sample's Values beside serverStatus's:
// census.running, census.queued, census.trackedBytes, and
// census.stage.<stage> (operations per stage).
const (
	CensusRunning      = "census.running"
	CensusQueued       = "census.queued"
	CensusTrackedBytes = "census.trackedBytes"
	CensusStagePrefix  = "census.stage."
)

// AddCensus adds a census of ops to values.
func AddCensus(values map[string]float64, ops []CensusOp) {
	var running, queued, tracked float64
	// Per stage first, so a stage's key is built once, not per operation
	// (a simulated queue holds thousands).
	stages := map[string]float64{}
	for _, o := range ops {
		if o.Queued {
			queued++
		} else {
			running++
		}
		tracked += float64(o.TrackedBytes)
		if o.Stage != "" {
			stages[o.Stage]++
		}
	}
	values[CensusRunning], values[CensusQueued], values[CensusTrackedBytes] = running, queued, tracked
	for st, n := range stages {
		values[CensusStagePrefix+st] += n
	}
}

// censusOps reads a member's active operations with $currentOp.
func censusOps(ctx context.Context, c *mongo.Client) ([]CensusOp, error) {
	cur, err := c.Database("admin").Aggregate(ctx, mongo.Pipeline{
		{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "idleConnections", Value: false}}}},
		{{Key: "$match", Value: bson.D{{Key: "active", Value: true}}}},
	})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var out []CensusOp
	for cur.Next(ctx) {
		if o, ok := censusOp(cur.Current); ok {
			out = append(out, o)
		}
	}
	return out, cur.Err()
}

// censusOp reads one $currentOp document; ok is false for what the census
// does not count (other kinds of operation, the census's own $currentOp).
// A tracked-memory figure that is not a non-negative whole number is
// absent, counted as no bytes.
func censusOp(d bson.Raw) (CensusOp, bool) {
	if d = readable(d); d == nil {
		return CensusOp{}, false
	}
	if op, _ := d.Lookup("op").StringValueOK(); op != "command" && op != "getmore" && op != "query" {
		return CensusOp{}, false
	}
	if cmd, ok := d.Lookup("command").DocumentOK(); ok {
		if _, isCurrentOp := cmd.Lookup("aggregate").AsInt64OK(); isCurrentOp {
			return CensusOp{}, false // the census's own $currentOp (aggregate: 1)
		}
	}
	o := CensusOp{Stage: stringOf(d.Lookup("stage"))}
	o.TrackedBytes, _ = wholeBytes(d.Lookup("inUseTrackedMemBytes"))
	o.Queued = d.Lookup("currentQueue").Type == bson.TypeEmbeddedDocument
	return o, true
}

// wholeBytes reads a byte count reported as an int32 or int64 (mongod's
// types for it); anything else, or a negative count, is absent.
func wholeBytes(v bson.RawValue) (int64, bool) {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64:
		if n, ok := v.AsInt64OK(); ok && n >= 0 {
			return n, true
		}
	}
	return 0, false
}

func stringOf(v bson.RawValue) string {
	s, _ := v.StringValueOK()
	return s
}
