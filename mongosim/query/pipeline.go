package query

import (
	"container/heap"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Env is what a pipeline needs from the server that runs it.
type Env interface {
	// Scan returns a snapshot of the documents of db.coll (empty when absent).
	Scan(db, coll string) []bson.Raw
	// CurrentOp returns the $currentOp documents for the stage's options.
	CurrentOp(opts bson.Raw) ([]bson.Raw, error)
	// Merge writes docs into the target as $merge specifies.
	Merge(spec *MergeSpec, docs []bson.Raw) error
	// Out replaces db.coll with docs.
	Out(db, coll string, docs []bson.Raw) error
	// CheckForInterrupt returns the error a killed operation must fail with.
	CheckForInterrupt() error
}

// Stage is one compiled pipeline stage. open connects it to its input in
// an execution: the stream it returns yields the stage's output.
type Stage interface {
	Name() string
	open(x *Execution, in stream) stream
}

// Pipeline is a compiled aggregation pipeline.
type Pipeline struct {
	Stages []Stage
	// Collectionless is set for pipelines that start with $currentOp.
	Collectionless bool
}

// StageNames lists the pipeline's stage names in order.
func (p *Pipeline) StageNames() []string {
	names := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		names[i] = s.Name()
	}
	return names
}

// HasWriteStage reports whether the pipeline ends in $merge or $out.
func (p *Pipeline) HasWriteStage() bool {
	if len(p.Stages) == 0 {
		return false
	}
	n := p.Stages[len(p.Stages)-1].Name()
	return n == "$merge" || n == "$out"
}

// Compile parses a pipeline. db is the database the aggregate runs in (a
// $merge/$out target without a db lands there).
func Compile(db string, stages []bson.Raw) (*Pipeline, error) {
	p := &Pipeline{}
	for i, raw := range stages {
		if err := checked(raw, "pipeline stage"); err != nil {
			return nil, err
		}
		elems, err := raw.Elements()
		if err != nil || len(elems) != 1 {
			return nil, mongoerr.New(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		name, spec := elems[0].Key(), elems[0].Value()
		var s Stage
		switch name {
		case "$match":
			s, err = compileMatch(spec)
		case "$sort":
			s, err = compileSortStage(spec)
		case "$limit":
			s, err = compileLimit(spec)
		case "$skip":
			s, err = compileSkip(spec)
		case "$unwind":
			s, err = compileUnwind(spec)
		case "$count":
			s, err = compileCount(spec)
		case "$addFields", "$set":
			s, err = compileAddFields(name, spec)
		case "$project":
			s, err = compileProject(spec)
		case "$group":
			s, err = compileGroup(spec)
		case "$setWindowFields":
			s, err = compileWindow(spec)
		case "$merge":
			s, err = compileMerge(db, spec)
		case "$out":
			s, err = compileOut(db, spec)
		case "$shardedDataDistribution":
			// mongod checks the argument, then that it runs on a router;
			// mongosim's router answers the stage before compiling.
			if d, ok := spec.DocumentOK(); !ok || len(d) != 5 {
				return nil, mongoerr.New(6789100, "The $shardedDataDistribution stage specification must be an empty object")
			}
			return nil, mongoerr.New(6789101, "The $shardedDataDistribution stage can only be run on router")
		case "$currentOp":
			if i != 0 {
				return nil, mongoerr.New(40602, "$currentOp is only valid as the first stage in a pipeline")
			}
			if db != "admin" {
				return nil, mongoerr.New(73, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
			}
			d, _ := spec.DocumentOK()
			s, p.Collectionless = currentOpStage{opts: bson.Raw(d)}, true
		default:
			if knownStages[name] {
				return nil, notImplemented("the stage " + name)
			}
			return nil, mongoerr.New(mongoerr.UnrecognizedPipelineStage, "Unrecognized pipeline stage name: '%s'", name)
		}
		if err != nil {
			return nil, err
		}
		if (name == "$merge" || name == "$out") && i != len(stages)-1 {
			return nil, mongoerr.New(40601, "%s can only be the final stage in the pipeline", name)
		}
		p.Stages = append(p.Stages, s)
	}
	// A $sort followed by a $limit keeps only the limit's documents, as
	// mongod coalesces them (the $limit stays, and is then a no-op).
	for i := 0; i+1 < len(p.Stages); i++ {
		if s, ok := p.Stages[i].(sortStage); ok {
			if l, ok := p.Stages[i+1].(limitStage); ok {
				s.limit = int64(l)
				p.Stages[i] = s
			}
		}
	}
	return p, nil
}

// streamFunc is a stream written as a function.
type streamFunc func() (bson.Raw, error)

func (f streamFunc) next() (bson.Raw, error) { return f() }

type matchStage struct{ f *Filter }

func compileMatch(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15959, "the match filter must be an expression in an object")
	}
	f, err := CompileFilter(bson.Raw(d))
	return matchStage{f}, err
}

func (matchStage) Name() string { return "$match" }
func (m matchStage) open(x *Execution, in stream) stream {
	return streamFunc(func() (bson.Raw, error) {
		for {
			d, err := in.next()
			if err != nil || d == nil {
				return nil, err
			}
			if err := x.tick(); err != nil {
				return nil, err
			}
			if m.f.Match(d) {
				return d, nil
			}
		}
	})
}

// sortStage is $sort; limit, when a $limit follows, keeps only that many
// documents (a top-k sort).
type sortStage struct {
	keys  []SortKey
	limit int64
}

func compileSortStage(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15973, "the $sort key specification must be an object")
	}
	keys, err := CompileSort(bson.Raw(d))
	return sortStage{keys: keys}, err
}

func (sortStage) Name() string { return "$sort" }
func (s sortStage) open(x *Execution, in stream) stream {
	var out []keyed
	loaded := false
	var t *memTracker
	return streamFunc(func() (bson.Raw, error) {
		if !loaded {
			loaded = true
			t = x.tracker("$sort", x.lim.SortBytes, true, sortOverLimit(x.lim.SortBytes))
			var err error
			if out, err = s.load(x, t, in); err != nil {
				return nil, err
			}
		}
		if len(out) == 0 {
			t.release()
			return nil, nil
		}
		d := out[0].doc
		out[0] = keyed{}
		out = out[1:]
		return d, nil
	})
}

// load reads the whole input and returns it sorted (its first limit
// documents for a top-k sort), the documents held counted by t.
func (s sortStage) load(x *Execution, t *memTracker, in stream) ([]keyed, error) {
	var ks []keyed
	top := &topK{keys: s.keys}
	for seq := 0; ; seq++ {
		d, err := in.next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		if err := x.tick(); err != nil {
			return nil, err
		}
		k := keyOf(d, s.keys, seq)
		if s.limit <= 0 {
			if err := t.grow(int64(len(d)), false); err != nil {
				return nil, err
			}
			ks = append(ks, k)
			continue
		}
		// Top-k: a max-heap of the k best so far; a document better than
		// the worst of them replaces it.
		if int64(top.Len()) < s.limit {
			if err := t.grow(int64(len(d)), false); err != nil {
				return nil, err
			}
			heap.Push(top, k)
		} else if top.less(k, top.items[0]) {
			t.shrink(int64(len(top.items[0].doc)), false)
			if err := t.grow(int64(len(d)), false); err != nil {
				return nil, err
			}
			top.items[0] = k
			heap.Fix(top, 0)
		}
	}
	if s.limit > 0 {
		ks = top.items
	}
	if err := sortKeyed(x, ks, s.keys); err != nil {
		return nil, err
	}
	return ks, nil
}

// topK is a heap whose root is the worst of the documents it keeps.
type topK struct {
	keys  []SortKey
	items []keyed
}

func (h *topK) less(a, b keyed) bool { return compareKeyed(a, b, h.keys) < 0 }
func (h *topK) Len() int             { return len(h.items) }
func (h *topK) Less(i, j int) bool   { return h.less(h.items[j], h.items[i]) }
func (h *topK) Swap(i, j int)        { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *topK) Push(v any)           { h.items = append(h.items, v.(keyed)) }
func (h *topK) Pop() any {
	v := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return v
}

type limitStage int64

// compileLimit compiles $limit, refusing what mongod (5.0+) refuses: a
// value that is not a non-negative integer (5107201) and 0 (15958).
func compileLimit(spec bson.RawValue) (Stage, error) {
	n, ok := wholeNumber(spec)
	if !ok || n < 0 {
		return nil, mongoerr.New(5107201, "invalid argument to $limit stage: expected a non-negative integer, got %s", spec)
	}
	if n == 0 {
		return nil, mongoerr.New(15958, "the limit must be positive")
	}
	return limitStage(n), nil
}

func (limitStage) Name() string { return "$limit" }
func (l limitStage) open(_ *Execution, in stream) stream {
	var n int64
	return streamFunc(func() (bson.Raw, error) {
		if n >= int64(l) {
			return nil, nil
		}
		d, err := in.next()
		if d != nil {
			n++
		}
		return d, err
	})
}

type projectStage struct{ p *Projection }

func compileProject(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15969, "$project specification must be an object")
	}
	p, err := CompileProjection(bson.Raw(d))
	if err == nil && p == nil {
		return nil, mongoerr.New(51272, "Invalid $project :: caused by :: projection specification must have at least one field")
	}
	return projectStage{p}, err
}

func (projectStage) Name() string { return "$project" }
func (s projectStage) open(x *Execution, in stream) stream {
	return streamFunc(func() (bson.Raw, error) {
		d, err := in.next()
		if err != nil || d == nil {
			return nil, err
		}
		if err := x.tick(); err != nil {
			return nil, err
		}
		out, err := s.p.Apply(d)
		if err != nil {
			return nil, err
		}
		return out, checkDocSize(out)
	})
}
