package query

import (
	"fmt"
	"slices"

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

// Stage is one compiled pipeline stage.
type Stage interface {
	Name() string
	Run(env Env, in []bson.Raw) ([]bson.Raw, error)
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
	return p, nil
}

// Run executes the pipeline over the input documents.
func (p *Pipeline) Run(env Env, in []bson.Raw) ([]bson.Raw, error) {
	docs := in
	for _, s := range p.Stages {
		if err := env.CheckForInterrupt(); err != nil {
			return nil, err
		}
		var err error
		if docs, err = s.Run(env, docs); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

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
func (m matchStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	out := in[:0:0]
	for _, d := range in {
		if m.f.Match(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

type sortStage struct{ keys []SortKey }

func compileSortStage(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15973, "the $sort key specification must be an object")
	}
	keys, err := CompileSort(bson.Raw(d))
	return sortStage{keys}, err
}

func (sortStage) Name() string { return "$sort" }
func (s sortStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	out := slices.Clone(in)
	Sort(out, s.keys)
	return out, nil
}

type limitStage int64

// compileLimit: mongod (5.0+) refuses a $limit that is not a
// non-negative integer with 5107201, and 0 with 15958.
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
func (l limitStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	if int64(len(in)) > int64(l) {
		return in[:l], nil
	}
	return in, nil
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
func (s projectStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	out := make([]bson.Raw, len(in))
	for i, d := range in {
		var err error
		if out[i], err = s.p.Apply(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// accumulator computes one output field over a set of documents.
type accumulator struct {
	op  string
	arg Expr
}

func compileAccumulator(field string, spec bson.RawValue) (accumulator, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return accumulator{}, mongoerr.New(40234, "The field '%s' must be an accumulator object", field)
	}
	elems, _ := bson.Raw(d).Elements()
	var acc accumulator
	found := false
	for _, e := range elems {
		switch e.Key() {
		case "$sum", "$avg", "$max", "$min", "$first", "$last", "$push", "$addToSet":
			arg, err := CompileExpr(e.Value())
			if err != nil {
				return accumulator{}, err
			}
			acc, found = accumulator{op: e.Key(), arg: arg}, true
		case "$count":
			acc, found = accumulator{op: "$count"}, true
		case "window":
		case "$stdDevPop", "$stdDevSamp", "$mergeObjects", "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN", "$maxN", "$minN", "$median", "$percentile":
			return accumulator{}, notImplemented("the accumulator " + e.Key())
		default:
			return accumulator{}, mongoerr.New(15952, "unknown group operator '%s'", e.Key())
		}
	}
	if !found {
		return accumulator{}, mongoerr.New(40234, "The field '%s' must be an accumulator object", field)
	}
	return acc, nil
}

func (a accumulator) over(docs []bson.Raw) (bson.RawValue, error) {
	var s sumAcc
	var best bson.RawValue
	var list []bson.RawValue
	switch a.op {
	case "$count":
		return Int32(int32(len(docs))), nil
	case "$first", "$last":
		if len(docs) == 0 {
			return Null, nil
		}
		d := docs[0]
		if a.op == "$last" {
			d = docs[len(docs)-1]
		}
		v, err := a.arg.Eval(d)
		if err != nil || v.Type != 0 {
			return v, err
		}
		return Null, nil
	}
	for _, d := range docs {
		v, err := a.arg.Eval(d)
		if err != nil {
			return Missing, err
		}
		switch a.op {
		case "$sum", "$avg":
			s.add(v)
		case "$push":
			if v.Type != 0 {
				list = append(list, v)
			}
		case "$addToSet":
			if v.Type != 0 && !slices.ContainsFunc(list, func(x bson.RawValue) bool { return equal(x, v) }) {
				list = append(list, v)
			}
		case "$max", "$min":
			if v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined {
				continue
			}
			c := Compare(v, best)
			if best.Type == 0 || (a.op == "$max" && c > 0) || (a.op == "$min" && c < 0) {
				best = v
			}
		}
	}
	switch a.op {
	case "$sum":
		return s.value(), nil
	case "$avg":
		return s.avg(), nil
	case "$push", "$addToSet":
		return Array(list), nil
	}
	if best.Type == 0 {
		return Null, nil
	}
	return best, nil
}

type groupStage struct {
	id     Expr
	fields []string
	accs   []accumulator
}

func compileGroup(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15947, "a group's fields must be specified in an object")
	}
	elems, _ := bson.Raw(d).Elements()
	g := groupStage{}
	hasID := false
	for _, e := range elems {
		if e.Key() == "_id" {
			id, err := CompileExpr(e.Value())
			if err != nil {
				return nil, err
			}
			g.id, hasID = id, true
			continue
		}
		acc, err := compileAccumulator(e.Key(), e.Value())
		if err != nil {
			return nil, err
		}
		g.fields, g.accs = append(g.fields, e.Key()), append(g.accs, acc)
	}
	if !hasID {
		return nil, mongoerr.New(15955, "a group specification must include an _id")
	}
	return g, nil
}

func (groupStage) Name() string { return "$group" }
func (g groupStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	order, groups, err := partitionBy(in, g.id)
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, 0, len(order))
	keys := append([]string{"_id"}, g.fields...)
	for _, id := range order {
		docs := groups[groupKey(id)]
		vals := []bson.RawValue{id}
		for _, a := range g.accs {
			v, err := a.over(docs)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		out = append(out, Build(keys, vals))
	}
	return out, nil
}

// groupKey is a map key under which equal values (1 and 1.0 among them) meet.
// partitionBy splits in by each document's value of key (a missing value
// counts as null; numbers of equal value are one key, as groupKey says),
// giving the values in the order first seen and, by groupKey, each one's
// documents in input order. A nil key puts every document in one
// partition, null. $group and $setWindowFields both partition this way.
func partitionBy(in []bson.Raw, key Expr) ([]bson.RawValue, map[string][]bson.Raw, error) {
	parts := map[string][]bson.Raw{}
	var order []bson.RawValue
	for _, d := range in {
		v := Null
		if key != nil {
			var err error
			if v, err = key.Eval(d); err != nil {
				return nil, nil, err
			}
			if v.Type == 0 {
				v = Null
			}
		}
		k := groupKey(v)
		if _, seen := parts[k]; !seen {
			order = append(order, v)
		}
		parts[k] = append(parts[k], d)
	}
	return order, parts, nil
}

func groupKey(v bson.RawValue) string {
	if IsNumber(v) {
		return fmt.Sprintf("n%v", Float(v))
	}
	return string(rune(typeOrder(v.Type))) + string(v.Value)
}
