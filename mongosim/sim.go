package mongosim

import (
	"errors"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/queryshape"
	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// simulation runs the member's execution-control, memory and shedding
// model on the wall clock. Commands that do query work enter it for a
// ticket and wait for their outcome; the model's state feeds serverStatus
// and currentOp.
type simulation struct {
	mu    sync.Mutex
	node  *model.Node
	start time.Time
	// byOp maps a command's opid to its model operation while it runs.
	byOp map[int32]*model.Op
	// scaleValue is SimOptions.ScanScale; partitionBytes the modelled size
	// of a $setWindowFields partition (simWindowPartitionMB).
	scaleValue     float64
	partitionBytes int64
}

// Hardware is the modelled machine of a member with these options and a
// memory limit; zero values take the model's documented defaults (an M50).
func (so SimOptions) Hardware(memLimitMB int64) model.Hardware {
	hw := model.Hardware{CPUs: so.CPUs, MemLimitBytes: memLimitMB << 20, DiskBytesPerSec: so.DiskMBps * (1 << 20)}.WithDefaults()
	if so.BaselineMB > 0 {
		h := *hw.Host
		h.MongodBaseBytes = so.BaselineMB << 20
		hw.Host = &h
	}
	return hw
}

// SimOptions are a member's simulation options (mongosim's own flags,
// --sim...).
type SimOptions struct {
	CPUs int
	// BaselineMB is mongod's resident memory outside the WiredTiger
	// cache and query memory (model.Host.MongodBaseBytes); 0: the host's
	// default for the memory limit.
	BaselineMB   int64
	DiskMBps     float64
	RestartDelay time.Duration
	// ScanScale is how many modelled documents one real document stands
	// for: the storm runs on small real data at the modelled scale.
	ScanScale float64
	// PartitionMB is the modelled size of a $setWindowFields partition a
	// getMore loads (default 20 MiB, the sweeper investigation's victims' 20-30 MB).
	PartitionMB int64
	Seed        uint64
	// OmitStatusSections are top-level serverStatus sections the member
	// leaves out of its reply (and its diagnostic data), such as
	// "queryMemory", "queues" or "mem": a server without them, as a 7.0
	// mongod has no queryMemory.loadShedding, for seeing how a client
	// treats what a server does not report.
	OmitStatusSections []string
	// OmitHostInfo are hostInfo.system fields the member leaves out, such
	// as "memLimitMB".
	OmitHostInfo []string
}

// omit drops the named fields of a document.
func omit(d bson.D, names []string) bson.D {
	if len(names) == 0 {
		return d
	}
	out := d[:0:0]
	for _, e := range d {
		if !slices.Contains(names, e.Key) {
			out = append(out, e)
		}
	}
	return out
}

func init() {
	failPointNames = append(failPointNames, "queryMemoryLoadSheddingAlwaysShed", "queryMemoryPressureOverride")
}

// modelParams are the model's parameters: the server's current values,
// already typed and checked by the parameter table.
func (s *Server) modelParams() model.Params {
	p, err := model.ParamsOf(s.params.all())
	if err != nil {
		s.log.Warn("model parameters rejected; keeping defaults", "err", err)
		return model.DefaultParams()
	}
	return p
}

func (s *Server) startSimulation() {
	so := s.opts.Sim
	hw := so.Hardware(s.opts.MemLimitMB)
	scale := so.ScanScale
	if scale <= 0 {
		scale = 1
	}
	partition := so.PartitionMB << 20
	if partition <= 0 {
		partition = 20 << 20
	}
	sim := &simulation{node: model.NewNode(hw, s.modelParams(), so.Seed+uint64(s.processID.Timestamp().UnixNano())), start: time.Now(),
		byOp: map[int32]*model.Op{}, scaleValue: scale, partitionBytes: partition}
	sim.node.OnCrash = func() {
		s.log.Error("Out of memory: the member's resident memory exceeded its limit; killed (simulated OOM kill)",
			"rssBytes", sim.node.RSS(), "limitBytes", hw.MemLimitBytes)
		go s.oomKill()
	}
	s.sim = sim
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(model.Tick)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
			}
			sim.mu.Lock()
			sim.node.AdvanceTo(time.Since(sim.start))
			sim.mu.Unlock()
		}
	}()
}

// oomKill ends the member as the kernel's OOM killer would, then lets the
// supervisor (the in-process replica set, or cmd/mongosim) restart it.
func (s *Server) oomKill() {
	s.oomKilled.Store(true)
	s.Kill()
	if s.opts.OnOOM != nil {
		s.opts.OnOOM(s)
	}
}

// OOMKilled reports whether the member died of (simulated) memory exhaustion.
func (s *Server) OOMKilled() bool { return s.oomKilled.Load() }

// enter runs a model operation for a command and waits for its outcome.
// A killOp of the command reaches the model op at once when it is queued.
func (s *Server) enter(r *request, op *model.Op) error {
	sim := s.sim
	done := make(chan model.Outcome, 1)
	op.Done = func(o model.Outcome) { done <- o }
	_, op.AppName = r.conn.metadata()
	sim.mu.Lock()
	s.syncFailPointsLocked(r, op)
	sim.node.Submit(op)
	if r.op != nil {
		sim.byOp[r.op.ID] = op
	}
	sim.mu.Unlock()
	defer func() {
		if r.op != nil {
			sim.mu.Lock()
			delete(sim.byOp, r.op.ID)
			sim.mu.Unlock()
		}
	}()
	var killed <-chan struct{}
	if r.op != nil {
		killed = r.op.Killed()
	}
	var o model.Outcome
	select {
	case o = <-done:
	case <-killed:
		sim.mu.Lock()
		sim.node.Kill(op.ID, r.op.killCode.Load())
		sim.mu.Unlock()
		select {
		case o = <-done:
		case <-s.ctx.Done():
			return killError(0)
		}
	case <-s.ctx.Done():
		return killError(0)
	}
	return outcomeError(o)
}

// syncFailPointsLocked applies the model's failpoints for request r and
// its model op: queryMemoryLoadSheddingAlwaysShed, for every op, or with
// mongosim's optional data field writeBatchesBeforeShed: N only for an op
// of a $merge/$out from its N-th write batch on (standing for a failpoint
// between writer flushes; other ops are not forced), and
// queryMemoryPressureOverride {usagePercent}.
func (s *Server) syncFailPointsLocked(r *request, op *model.Op) {
	n := s.sim.node
	n.AlwaysShed = false
	if data, ok := s.fail.active("queryMemoryLoadSheddingAlwaysShed"); ok {
		if after, ok := data.Lookup("writeBatchesBeforeShed").AsInt64OK(); ok {
			op.ForceShed = r.writing && int64(r.writeBatch) >= after
		} else {
			n.AlwaysShed = true
		}
	}
	n.PressureOverride = -1
	if data, ok := s.fail.active("queryMemoryPressureOverride"); ok {
		if pct, ok := data.Lookup("usagePercent").AsFloat64OK(); ok {
			n.PressureOverride = pct
		}
	}
}

// errProcessDied is the end of an operation whose member the model
// OOM-killed: the kernel's SIGKILL leaves mongod no time to answer, so the
// command gets no reply and its connection closes (the client sees a
// network error), whatever the race with closing every connection.
var errProcessDied = errors.New("the member died under the operation (simulated OOM kill): no reply")

// outcomeError is the error the client gets for a model operation's
// outcome (nil when it succeeded). QueryMemoryLimitExceeded's number is
// not in any stored error_codes.yml; clients should match its codeName,
// which is mongod's.
func outcomeError(o model.Outcome) error {
	switch o.Code {
	case 0:
		return nil
	case model.CodeQueryMemoryLimitExceeded:
		return mongoerr.New(model.CodeQueryMemoryLimitExceeded,
			"Operation load-shed because the server is under memory pressure. Retry when the server is less loaded.").
			WithLabels("SystemOverloadedError", "RetryableError")
	case model.CodeHostUnreachable:
		return errProcessDied
	case mongoerr.CursorNotFound:
		return mongoerr.New(mongoerr.CursorNotFound, "cursor not found (killed or shed)")
	}
	return killError(o.Code)
}

// pointOp is a canary-sized read or write: with a free ticket it is
// admitted and done at once; otherwise it queues like anything else.
func (s *Server) pointOp(r *request, write bool) error {
	if s.sim == nil {
		return nil
	}
	s.sim.mu.Lock()
	now := s.sim.node.RunNow(write)
	s.sim.mu.Unlock()
	if now {
		return nil
	}
	kind := model.KindFind
	if write {
		kind = model.KindInsert
	}
	return s.enter(r, &model.Op{Kind: kind, Write: write, Work: model.PointWork()})
}

// shapeOf describes a pipeline with a blocking stage as a modelled query:
// the real input stands for ScanScale times as many documents. Pipelines
// without a blocking stage are not modelled (they run as point work).
func (sim *simulation) shapeOf(p *query.Pipeline, in []bson.Raw, batchDocs int) (model.QueryShape, bool) {
	if sim == nil || len(in) == 0 {
		return model.QueryShape{}, false
	}
	stage := ""
	for _, n := range p.StageNames() {
		if n == "$setWindowFields" || n == "$sort" || n == "$group" {
			stage = n
			break
		}
	}
	if stage == "" {
		return model.QueryShape{}, false
	}
	var bytes int64
	for _, d := range in {
		bytes += int64(len(d))
	}
	sim.mu.Lock()
	params, hw, scale := sim.node.Params(), sim.node.Hardware(), sim.scaleValue
	sim.mu.Unlock()
	q := model.QueryShape{Stage: stage, ScanDocs: int64(float64(len(in)) * scale), DocBytes: max(bytes/int64(len(in)), 1)}
	input := q.ScanDocs * q.DocBytes
	limit := params.StageLimit(stage)
	if input > limit {
		runs := (input + limit - 1) / limit
		q.HoldBytes = runs * hw.SpillBlockBytes // one merge buffer per spilled run
	} else {
		q.HoldBytes = input // the result stays in memory
	}
	if stage == "$setWindowFields" {
		q.LoadBytes = min(input, sim.partitionBytes, params.WindowMemoryBytes)
	}
	q.BatchDocs = int64(float64(max(batchDocs, 1)) * scale)
	return q, true
}

// ShapeHintKey names the field of an aggregate's comment that says which
// modelled query the pipeline stands for (queryshape.HintKey: a client
// that drives the model sends it so that a query on small real data runs
// as the query it describes). Without it the shape is derived from the
// real input scaled by --simScanScale.
const ShapeHintKey = queryshape.HintKey

// shapeHint reads an aggregate's shape hint, if it has one.
func shapeHint(body bson.Raw) (model.QueryShape, bool, error) {
	v, err := body.LookupErr("comment", ShapeHintKey)
	if err != nil {
		return model.QueryShape{}, false, nil
	}
	var q model.QueryShape
	doc, ok := v.DocumentOK()
	if !ok {
		return q, false, mongoerr.New(mongoerr.BadValue, "comment.%s must be a document", ShapeHintKey)
	}
	if err := bson.Unmarshal(doc, &q); err != nil {
		return q, false, mongoerr.New(mongoerr.BadValue, "comment.%s: %v", ShapeHintKey, err)
	}
	if err := q.Check(); err != nil {
		return q, false, mongoerr.New(mongoerr.BadValue, "comment.%s: %v", ShapeHintKey, err)
	}
	return q, true, nil
}

// takeShare is the work of a getMore returning docs of the left real
// documents of a hinted cursor: its share of the modelled getMores left
// (all of them for the last batch), done one after another.
func takeShare(works []model.Work, docs, left int, q model.QueryShape) (model.Work, []model.Work) {
	k := len(works)
	if docs < left {
		k = min((len(works)*docs+left-1)/left, len(works))
	}
	if k == 0 {
		// More real batches than modelled ones: this one only holds the
		// cursor's buffer while it waits for a ticket.
		return model.Work{HoldBytes: q.HoldBytes, Stage: q.Stage, Exhausts: docs >= left}, works
	}
	w := model.Combine(works[:k])
	w.Exhausts = docs >= left
	return w, works[k:]
}

// params are the member's model parameters in force, read under the
// simulation's lock (setParameter replaces them while queries run).
func (sim *simulation) params() model.Params {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	return sim.node.Params()
}

// getMoreWork is the model's work for a getMore returning docs real
// documents of a modelled cursor.
func (sim *simulation) getMoreWork(q model.QueryShape, docs int, last bool) model.Work {
	sim.mu.Lock()
	params, scale := sim.node.Params(), sim.scaleValue
	sim.mu.Unlock()
	q.OutputBytes = max(int64(float64(docs)*scale)*q.DocBytes, 1)
	q.BatchDocs = max(int64(float64(docs)*scale), 1)
	w := params.GetMoreWorks(q)[0]
	w.Exhausts = last
	return w
}

func (sim *simulation) scale(*Server) float64 { return sim.scaleValue }

// cursorTracked is the tracked memory a modelled idle cursor's buffer
// holds.
func (sim *simulation) cursorTracked(id int64) int64 {
	if sim == nil {
		return 0
	}
	sim.mu.Lock()
	defer sim.mu.Unlock()
	return sim.node.CursorBytes(id)
}

// peakTracked is a finished model operation's tracked-memory peak.
func (sim *simulation) peakTracked(op *model.Op) int64 {
	if sim == nil {
		return 0
	}
	sim.mu.Lock()
	defer sim.mu.Unlock()
	return op.PeakTracked()
}

// killCursor frees a modelled cursor's buffer.
func (sim *simulation) killCursor(id int64) {
	if sim == nil {
		return
	}
	sim.mu.Lock()
	sim.node.KillCursor(id)
	sim.mu.Unlock()
}

func (s *Server) dropModelCursor(c *cursor) {
	if c.shape != nil {
		s.sim.killCursor(c.id)
	}
}

// addModelStatusSections registers the serverStatus sections the model
// produces (queues, queryMemory, tcmalloc, mongosim).
func (s *Server) addModelStatusSections() {
	s.AddStatusSection(StatusSection{Name: "queues", Fn: s.queuesSection})
	s.AddStatusSection(StatusSection{Name: "queryMemory", Fn: s.queryMemorySection})
	s.AddStatusSection(StatusSection{Name: "tcmalloc", Fn: s.tcmallocSection})
	s.AddStatusSection(StatusSection{Name: "mongosim", Fn: s.mongosimSection})
}

// mongosimSection is serverStatus.mongosim: the simulation marker and the
// simulated host's spill I/O, as a virtual trial's samples have them.
func (s *Server) mongosimSection() any {
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	return append(simulatedSection(), bson.E{Key: "spillIO", Value: SpillIOSection(s.sim.node)})
}

func (s *Server) queuesSection() any {
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	return QueuesSection(s.sim.node)
}

func (s *Server) queryMemorySection() any {
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	return QueryMemorySection(s.sim.node)
}

func (s *Server) tcmallocSection() any {
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	return TcmallocSection(s.sim.node)
}

// residentMB is mem.resident from the model.
func (s *Server) residentMB() int32 {
	if s.sim == nil {
		return 0
	}
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	return int32(s.sim.node.RSS() >> 20)
}

// spillCounters are metrics.query's spill counters from the model.
func (s *Server) spillCounters() bson.D {
	s.sim.mu.Lock()
	defer s.sim.mu.Unlock()
	d := bson.D{}
	for _, k := range []string{"sort", "group", "setWindowFields"} {
		st := s.sim.node.Spills[k]
		if k == "sort" {
			d = append(d, bson.E{Key: k, Value: bson.D{{Key: "spillToDisk", Value: st.Spills}, {Key: "spillToDiskBytes", Value: st.SpilledBytes}}})
			continue
		}
		d = append(d, bson.E{Key: k, Value: bson.D{{Key: "spills", Value: st.Spills}, {Key: "spilledBytes", Value: st.SpilledBytes},
			{Key: "spilledRecords", Value: st.SpilledRecords}, {Key: "spilledDataStorageSize", Value: st.SpilledBytes}}})
	}
	return d
}

// modelOpFields are currentOp's execution-control and memory fields for
// an op, from the model: tracked memory, yields, admissions, and the queue
// it waits in (currentQueue is null while it holds a ticket).
func (s *Server) modelOpFields(o *Op) bson.D {
	var mop *model.Op
	if s.sim != nil {
		s.sim.mu.Lock()
		defer s.sim.mu.Unlock()
		mop = s.sim.byOp[o.ID]
	}
	admissions, tracked, peak, queued, stage := 1, int64(0), int64(0), false, ""
	if mop != nil {
		admissions, tracked, peak, queued, stage = mop.Admissions(), mop.Tracked(), mop.PeakTracked(), mop.Queued(), mop.Work.Stage
	}
	d := bson.D{}
	if stage != "" {
		d = append(d, bson.E{Key: "planSummary", Value: "COLLSCAN"}, bson.E{Key: "stage", Value: stage})
	}
	if tracked > 0 {
		d = append(d, bson.E{Key: "inUseTrackedMemBytes", Value: tracked}, bson.E{Key: "peakTrackedMemBytes", Value: peak})
	}
	d = append(d, bson.E{Key: "numYields", Value: int32(max(admissions-1, 0))},
		bson.E{Key: "queues", Value: bson.D{
			{Key: "ingress", Value: bson.D{{Key: "admissions", Value: int32(1)}, {Key: "totalTimeQueuedMicros", Value: int64(0)}}},
			{Key: "execution", Value: bson.D{{Key: "admissions", Value: int32(admissions)}, {Key: "totalTimeQueuedMicros", Value: int64(0)}, {Key: "isHoldingTicket", Value: !queued}}},
		}})
	if mop != nil && mop.LowPriority() {
		// ExecutionAdmissionContext's priorityLowered: the op was
		// deprioritized (what a killOp actor's low-priority policy reads).
		d = append(d, bson.E{Key: "priorityLowered", Value: true})
	}
	if queued {
		d = append(d, bson.E{Key: "currentQueue", Value: bson.D{{Key: "name", Value: "execution"}, {Key: "timeQueuedMicros", Value: int64(0)}}})
	} else {
		d = append(d, bson.E{Key: "currentQueue", Value: nil})
	}
	return d
}
