package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// windowOutput is one output field of $setWindowFields.
type windowOutput struct {
	field   string
	acc     accumulator
	bounded bool
	lo, hi  int // offsets from the current document; unbounded = ±inf
	loInf   bool
	hiInf   bool
}

type windowStage struct {
	partition Expr
	sortBy    []SortKey
	outputs   []windowOutput
}

func compileWindow(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $setWindowFields stage specification must be an object")
	}
	w := windowStage{}
	elems, _ := bson.Raw(d).Elements()
	for _, e := range elems {
		switch e.Key() {
		case "partitionBy":
			x, err := CompileExpr(e.Value())
			if err != nil {
				return nil, err
			}
			w.partition = x
		case "sortBy":
			sd, ok := e.Value().DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "sortBy must be an object")
			}
			keys, err := CompileSort(bson.Raw(sd))
			if err != nil {
				return nil, err
			}
			w.sortBy = keys
		case "output":
			od, ok := e.Value().DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "output must be an object")
			}
			outs, _ := bson.Raw(od).Elements()
			for _, o := range outs {
				wo, err := compileWindowOutput(o.Key(), o.Value())
				if err != nil {
					return nil, err
				}
				w.outputs = append(w.outputs, wo)
			}
		default:
			return nil, mongoerr.New(40415, "BSON field '$setWindowFields.%s' is an unknown field.", e.Key())
		}
	}
	if len(w.outputs) == 0 {
		return nil, mongoerr.New(40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	return w, nil
}

func compileWindowOutput(field string, spec bson.RawValue) (windowOutput, error) {
	acc, err := compileAccumulator(field, spec)
	if err != nil {
		return windowOutput{}, err
	}
	wo := windowOutput{field: field, acc: acc, loInf: true, hiInf: true}
	sd, _ := spec.DocumentOK() // compileAccumulator refused anything else
	win, err := bson.Raw(sd).LookupErr("window")
	if err != nil {
		return wo, nil
	}
	wd, ok := win.DocumentOK()
	if !ok {
		return wo, mongoerr.New(mongoerr.FailedToParse, "'window' field must be an object")
	}
	docs, err := bson.Raw(wd).LookupErr("documents")
	if err != nil {
		return wo, mongoerr.New(mongoerr.FailedToParse, "'window' supports only 'documents' bounds in mongosim")
	}
	arr, ok := docs.ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) != 2 {
		return wo, mongoerr.New(mongoerr.FailedToParse, "Window bounds must be a 2-element array: {documents: [lower, upper]}")
	}
	bound := func(v bson.RawValue) (int, bool, error) {
		if s, ok := v.StringValueOK(); ok {
			switch s {
			case "unbounded":
				return 0, true, nil
			case "current":
				return 0, false, nil
			}
		}
		if n, ok := v.AsInt64OK(); ok {
			return int(n), false, nil
		}
		return 0, false, mongoerr.New(mongoerr.FailedToParse, "Numeric document-based bounds must be an integer")
	}
	wo.bounded = true
	if wo.lo, wo.loInf, err = bound(vals[0]); err != nil {
		return wo, err
	}
	if wo.hi, wo.hiInf, err = bound(vals[1]); err != nil {
		return wo, err
	}
	return wo, nil
}

func docFields(d bson.Raw) ([]string, []bson.RawValue) {
	elems, _ := d.Elements()
	keys := make([]string, len(elems))
	vals := make([]bson.RawValue, len(elems))
	for i, e := range elems {
		keys[i], vals[i] = e.Key(), e.Value()
	}
	return keys, vals
}

// MergeSpec is a compiled $merge stage.
type MergeSpec struct {
	DB, Coll       string
	On             []string
	WhenMatched    string // replace | keepExisting | merge | fail
	WhenNotMatched string // insert | discard | fail
}

type mergeStage struct{ spec MergeSpec }

func compileMerge(db string, spec bson.RawValue) (Stage, error) {
	m := MergeSpec{DB: db, On: []string{"_id"}, WhenMatched: "merge", WhenNotMatched: "insert"}
	if s, ok := spec.StringValueOK(); ok {
		m.Coll = s
		return mergeStage{m}, nil
	}
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(51182, "$merge requires a string or object argument")
	}
	elems, _ := bson.Raw(d).Elements()
	for _, e := range elems {
		v := e.Value()
		switch e.Key() {
		case "into":
			if s, ok := v.StringValueOK(); ok {
				m.Coll = s
			} else if t, ok := v.DocumentOK(); ok {
				if s, ok := bson.Raw(t).Lookup("db").StringValueOK(); ok {
					m.DB = s
				}
				m.Coll, _ = bson.Raw(t).Lookup("coll").StringValueOK()
			}
		case "on":
			if s, ok := v.StringValueOK(); ok {
				m.On = []string{s}
			} else if arr, ok := v.ArrayOK(); ok {
				vals, _ := arr.Values()
				m.On = nil
				for _, x := range vals {
					s, ok := x.StringValueOK()
					if !ok {
						return nil, mongoerr.New(mongoerr.FailedToParse, "$merge 'on' array elements must be strings, but found %s", x.Type)
					}
					m.On = append(m.On, s)
				}
			}
		case "whenMatched":
			m.WhenMatched, _ = v.StringValueOK()
		case "whenNotMatched":
			m.WhenNotMatched, _ = v.StringValueOK()
		case "let":
		default:
			return nil, mongoerr.New(40415, "BSON field '$merge.%s' is an unknown field.", e.Key())
		}
	}
	if m.Coll == "" {
		return nil, mongoerr.New(40414, "BSON field '$merge.into' is missing but a required field")
	}
	if !slices.Contains([]string{"replace", "keepExisting", "merge", "fail"}, m.WhenMatched) {
		return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'whenMatched' is not a valid value.", m.WhenMatched)
	}
	if !slices.Contains([]string{"insert", "discard", "fail"}, m.WhenNotMatched) {
		return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'whenNotMatched' is not a valid value.", m.WhenNotMatched)
	}
	return mergeStage{m}, nil
}

func (mergeStage) Name() string { return "$merge" }
func (m mergeStage) open(x *Execution, in stream) stream {
	return writeStream(x, "$merge", in, func(docs []bson.Raw) error { return x.env.Merge(&m.spec, docs) })
}

// writeStream is a write stage's output: nothing, once it has read its
// whole input (the documents to write, held against the operation's
// limit) and written it.
func writeStream(x *Execution, stage string, in stream, write func([]bson.Raw) error) stream {
	done := false
	return streamFunc(func() (bson.Raw, error) {
		if done {
			return nil, nil
		}
		done = true
		var docs []bson.Raw
		var held int64
		defer func() { x.uncharge(held) }()
		for {
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
			if err := x.charge(int64(len(d)), stage); err != nil {
				return nil, err
			}
			held += int64(len(d))
			docs = append(docs, d)
		}
		return nil, write(docs)
	})
}

type outStage struct{ db, coll string }

func compileOut(db string, spec bson.RawValue) (Stage, error) {
	o := outStage{db: db}
	if s, ok := spec.StringValueOK(); ok {
		o.coll = s
	} else if d, ok := spec.DocumentOK(); ok {
		if s, ok := bson.Raw(d).Lookup("db").StringValueOK(); ok {
			o.db = s
		}
		o.coll, _ = bson.Raw(d).Lookup("coll").StringValueOK()
	}
	if o.coll == "" {
		return nil, mongoerr.New(16990, "$out only supports a string or object argument, with a 'coll' field")
	}
	return o, nil
}

func (outStage) Name() string { return "$out" }
func (o outStage) open(x *Execution, in stream) stream {
	return writeStream(x, "$out", in, func(docs []bson.Raw) error { return x.env.Out(o.db, o.coll, docs) })
}

type currentOpStage struct{ opts bson.Raw }

func (currentOpStage) Name() string { return "$currentOp" }
func (c currentOpStage) open(x *Execution, _ stream) stream {
	var ops []bson.Raw
	loaded := false
	return streamFunc(func() (bson.Raw, error) {
		if !loaded {
			loaded = true
			var err error
			if ops, err = x.env.CurrentOp(c.opts); err != nil {
				return nil, err
			}
		}
		if len(ops) == 0 {
			return nil, nil
		}
		d := ops[0]
		ops = ops[1:]
		return d, nil
	})
}
