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
		d := cur.Current
		if op, _ := d.Lookup("op").StringValueOK(); op != "command" && op != "getmore" && op != "query" {
			continue
		}
		if cmd, ok := d.Lookup("command").DocumentOK(); ok {
			if _, isCurrentOp := cmd.Lookup("aggregate").AsInt64OK(); isCurrentOp {
				continue // the census's own $currentOp (aggregate: 1)
			}
		}
		o := CensusOp{Stage: stringOf(d.Lookup("stage"))}
		o.TrackedBytes, _ = d.Lookup("inUseTrackedMemBytes").AsInt64OK()
		q := d.Lookup("currentQueue")
		o.Queued = q.Type == bson.TypeEmbeddedDocument
		out = append(out, o)
	}
	return out, cur.Err()
}

func stringOf(v bson.RawValue) string {
	s, _ := v.StringValueOK()
	return s
}
