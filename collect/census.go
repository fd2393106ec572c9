package collect

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/qmlsab/qmlsab/store"
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
	var c Census
	for _, o := range ops {
		c.Add(o)
	}
	c.AddTo(values)
}

// Census counts operations one at a time, for a caller that walks its
// operations itself (the virtual engine walks thousands a sample) and
// need not build a list for AddCensus. Stages are counted in a short list
// compared by value: a sample sees a handful of stages, so no key is built
// or hashed per operation. The zero Census is empty; Reset empties one
// for reuse.
type Census struct {
	running, queued int
	tracked         int64
	stages          []stageCount
}

type stageCount struct {
	stage string
	n     int
}

// Add counts one operation.
func (c *Census) Add(o CensusOp) {
	if o.Queued {
		c.queued++
	} else {
		c.running++
	}
	// Each op counts at most store.MaxTrackedBytes, and the sum saturates
	// rather than wrap past 2^63 when thousands of ops each report an
	// absurd size.
	c.tracked = min(c.tracked+store.ClampTrackedBytes(o.TrackedBytes), math.MaxInt64-store.MaxTrackedBytes)
	if o.Stage == "" {
		return
	}
	for i := range c.stages {
		if c.stages[i].stage == o.Stage {
			c.stages[i].n++
			return
		}
	}
	c.stages = append(c.stages, stageCount{o.Stage, 1})
}

// AddCounts counts operations their owner has tallied already (the
// virtual engine's model keeps its census as operations come and go):
// running and queued of them, holding tracked bytes in all. Their stages
// are counted with AddStage.
func (c *Census) AddCounts(running, queued int, tracked int64) {
	c.running += running
	c.queued += queued
	c.tracked += tracked
}

// AddStage counts ops operations of one stage.
func (c *Census) AddStage(stage string, ops int) {
	if stage == "" || ops == 0 {
		return
	}
	for i := range c.stages {
		if c.stages[i].stage == stage {
			c.stages[i].n += ops
			return
		}
	}
	c.stages = append(c.stages, stageCount{stage, ops})
}

// AddTo stores the census's fields in values (a stage's count adds to
// what values already holds for it).
func (c *Census) AddTo(values map[string]float64) {
	values[CensusRunning], values[CensusQueued], values[CensusTrackedBytes] = float64(c.running), float64(c.queued), float64(c.tracked)
	for _, st := range c.stages {
		values[CensusStagePrefix+st.stage] += float64(st.n)
	}
}

// Reset empties the census, keeping its storage.
func (c *Census) Reset() { *c = Census{stages: c.stages[:0]} }

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
// types for it); anything else, or a negative count, is absent. A count
// above store.MaxTrackedBytes, which no server holds, is clamped to it.
func wholeBytes(v bson.RawValue) (int64, bool) {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64:
		if n, ok := v.AsInt64OK(); ok && n >= 0 {
			return store.ClampTrackedBytes(n), true
		}
	}
	return 0, false
}

func stringOf(v bson.RawValue) string {
	s, _ := v.StringValueOK()
	return s
}
