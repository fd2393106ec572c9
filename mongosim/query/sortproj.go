package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// SortKey is one field of a sort specification.
type SortKey struct {
	Path string
	Desc bool
}

// CompileSort parses a sort specification such as {a: 1, b: -1}.
func CompileSort(spec bson.Raw) ([]SortKey, error) {
	if err := checked(spec, "sort specification"); err != nil {
		return nil, err
	}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "bad sort specification: %v", err)
	}
	if len(elems) == 0 {
		return nil, mongoerr.New(15976, "$sort stage must have at least one sort key")
	}
	keys := make([]SortKey, 0, len(elems))
	for _, e := range elems {
		f, ok := e.Value().AsFloat64OK()
		if !ok || (f != 1 && f != -1) {
			return nil, mongoerr.New(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		keys = append(keys, SortKey{Path: e.Key(), Desc: f < 0})
	}
	return keys, nil
}

// Sort orders docs in place, stably, by keys.
func Sort(docs []bson.Raw, keys []SortKey) {
	slices.SortStableFunc(docs, func(a, b bson.Raw) int { return CompareBy(a, b, keys) })
}

// CompareBy compares two documents by sort keys.
func CompareBy(a, b bson.Raw, keys []SortKey) int {
	for _, k := range keys {
		c := Compare(Lookup(a, k.Path), Lookup(b, k.Path))
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// Projection is a compiled find/$project projection.
type Projection struct {
	include   bool
	fields    []string
	exprs     []Expr
	excludeID bool
}

// CompileProjection parses an inclusion ({a:1, b:"$c"}) or exclusion ({a:0})
// projection. _id is kept unless excluded explicitly.
func CompileProjection(spec bson.Raw) (*Projection, error) {
	if err := checked(spec, "projection"); err != nil {
		return nil, err
	}
	p := &Projection{}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "bad projection: %v", err)
	}
	if len(elems) == 0 {
		return nil, nil
	}
	mode := 0 // 1 inclusion, -1 exclusion
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		isFlag := v.Type == bson.TypeBoolean || IsNumber(v)
		if k == "_id" && isFlag {
			if !Truthy(v) {
				p.excludeID = true
			}
			continue
		}
		var expr Expr
		m := 1
		if isFlag {
			if !Truthy(v) {
				m = -1
			}
		} else {
			expr, err = CompileExpr(v)
			if err != nil {
				return nil, err
			}
		}
		if mode != 0 && m != mode {
			return nil, mongoerr.New(31254, "Cannot do exclusion on field %s in inclusion projection", k)
		}
		mode = m
		p.fields = append(p.fields, k)
		p.exprs = append(p.exprs, expr)
	}
	p.include = mode >= 0
	if mode == 0 && !p.excludeID {
		return nil, nil
	}
	return p, nil
}

// Apply projects doc.
func (p *Projection) Apply(doc bson.Raw) bson.Raw {
	if p == nil {
		return doc
	}
	var keys []string
	var vals []bson.RawValue
	if p.include {
		if !p.excludeID {
			if id := Lookup(doc, "_id"); id.Type != 0 {
				keys, vals = append(keys, "_id"), append(vals, id)
			}
		}
		for i, f := range p.fields {
			var v bson.RawValue
			if p.exprs[i] != nil {
				v = p.exprs[i].Eval(doc)
			} else {
				v = Lookup(doc, f)
			}
			keys, vals = append(keys, f), append(vals, v)
		}
		return Build(keys, vals)
	}
	elems, _ := doc.Elements()
	for _, e := range elems {
		k := e.Key()
		if (k == "_id" && p.excludeID) || slices.Contains(p.fields, k) {
			continue
		}
		keys, vals = append(keys, k), append(vals, e.Value())
	}
	return Build(keys, vals)
}
