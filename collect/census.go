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
	Queued bool // currentQueue is non-null: waiting for a ticket
	// LowPriority: the op was deprioritized (priorityLowered), so a
	// queued one waits in the low-priority queue.
	LowPriority bool
	// IdleCursor: the entry is an idle cursor (type "idleCursor"), not an
	// operation: it holds tracked memory between getMores.
	IdleCursor   bool
	TrackedBytes int64  // inUseTrackedMemBytes
	Stage        string // the pipeline's blocking stage, when reported
}

// place is where the census counts the op's tracked bytes (store.Queues).
func (o CensusOp) place() int {
	if o.IdleCursor {
		return placeIdleCursors
	}
	switch store.QueueOf(o.Queued, o.LowPriority) {
	case store.QueueLowPriority:
		return placeLowQueue
	case store.QueueNormalPriority:
		return placeNormalQueue
	}
	return placeRunning
}

// The census's places of tracked memory, in store.Queues' order.
const (
	placeLowQueue = iota
	placeNormalQueue
	placeRunning
	placeIdleCursors
	places
)

// Census fields are stored in a store.Sample's Values beside serverStatus's:
// census.running, census.queued, census.trackedBytes (of operations),
// census.trackedBytes.<place> for each of store.Queues (idle cursors
// included), and census.stage.<stage> (operations per stage).
const (
	CensusRunning      = store.FieldCensusRunning
	CensusQueued       = store.FieldCensusQueued
	CensusTrackedBytes = store.FieldCensusTrackedBytes
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
	tracked         [places]int64
	stages          []stageCount
}

type stageCount struct {
	stage string
	n     int
}

// addTracked adds an op's tracked bytes to a place's sum: each op counts
// at most store.MaxTrackedBytes, and the sum saturates at a quarter of
// int64's range, so that thousands of ops each reporting an absurd size
// neither wrap one place past 2^63 nor the places' total.
func addTracked(sum *int64, b int64) {
	*sum = min(*sum+store.ClampTrackedBytes(b), math.MaxInt64/4)
}

// Add counts one operation, or one idle cursor's tracked bytes.
func (c *Census) Add(o CensusOp) {
	addTracked(&c.tracked[o.place()], o.TrackedBytes)
	if o.IdleCursor {
		return
	}
	if o.Queued {
		c.queued++
	} else {
		c.running++
	}
	c.AddStage(o.Stage, 1)
}

// Tracked is tracked memory by place: the operations waiting in the
// low-priority and in the normal-priority queue, those running, and idle
// cursors.
type Tracked struct{ LowQueue, NormalQueue, Running, IdleCursors int64 }

// AddCounts counts operations their owner has tallied already (the
// virtual engine's model keeps its census as operations come and go):
// running and queued of them, and the tracked bytes in each place. Their
// stages are counted with AddStage.
func (c *Census) AddCounts(running, queued int, tracked Tracked) {
	c.running += running
	c.queued += queued
	c.tracked[placeLowQueue] += tracked.LowQueue
	c.tracked[placeNormalQueue] += tracked.NormalQueue
	c.tracked[placeRunning] += tracked.Running
	c.tracked[placeIdleCursors] += tracked.IdleCursors
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
	ops := c.tracked[placeLowQueue] + c.tracked[placeNormalQueue] + c.tracked[placeRunning]
	values[CensusRunning], values[CensusQueued], values[CensusTrackedBytes] = float64(c.running), float64(c.queued), float64(ops)
	for i, q := range store.Queues {
		values[store.CensusTrackedField(q)] = float64(c.tracked[i])
	}
	for _, st := range c.stages {
		values[CensusStagePrefix+st.stage] += float64(st.n)
	}
}

// Reset empties the census, keeping its storage.
func (c *Census) Reset() { *c = Census{stages: c.stages[:0]} }

// censusOps reads a member's active operations and idle cursors with
// $currentOp.
func censusOps(ctx context.Context, c *mongo.Client) ([]CensusOp, error) {
	cur, err := c.Database("admin").Aggregate(ctx, mongo.Pipeline{
		{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "idleConnections", Value: false}, {Key: "idleCursors", Value: true}}}},
		{{Key: "$match", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "active", Value: true}}, bson.D{{Key: "type", Value: "idleCursor"}}}}}}},
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
// An idle cursor (type "idleCursor", which mongod lists with
// idleCursors: true) counts its tracked bytes only. A tracked-memory
// figure that is not a non-negative whole number is absent, counted as no
// bytes.
func censusOp(d bson.Raw) (CensusOp, bool) {
	if d = readable(d); d == nil {
		return CensusOp{}, false
	}
	if typ, _ := d.Lookup("type").StringValueOK(); typ == "idleCursor" {
		o := CensusOp{IdleCursor: true}
		o.TrackedBytes, _ = wholeBytes(d.Lookup("inUseTrackedMemBytes"))
		return o, true
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
	o.LowPriority, _ = d.Lookup("priorityLowered").BooleanOK()
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
