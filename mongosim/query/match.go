package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Filter is a compiled query predicate.
type Filter struct {
	preds []predicate
}

type predicate func(doc bson.Raw) bool

// IDEquality returns the _id value when the filter is exactly {_id: <scalar>},
// the shape a point read takes, so callers can use the _id index.
func IDEquality(filter bson.Raw) (bson.RawValue, bool) {
	if checked(filter, "filter") != nil {
		return Missing, false
	}
	elems, err := filter.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return Missing, false
	}
	v := elems[0].Value()
	if d, ok := v.DocumentOK(); ok {
		first, err := d.IndexErr(0)
		if err == nil && len(first.Key()) > 0 && first.Key()[0] == '$' {
			if first.Key() == "$eq" {
				return first.Value(), true
			}
			return Missing, false
		}
	}
	return v, v.Type != bson.TypeArray && v.Type != bson.TypeRegex
}

// CompileFilter compiles a find/$match filter. Supported: equality and the
// comparison operators $eq $ne $gt $gte $lt $lte $in $nin $exists on field
// paths, and $and/$or/$nor of such filters.
func CompileFilter(filter bson.Raw) (*Filter, error) {
	f := &Filter{}
	if len(filter) == 0 {
		return f, nil
	}
	if err := checked(filter, "filter"); err != nil {
		return nil, err
	}
	elems, err := filter.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "bad filter: %v", err)
	}
	for _, e := range elems {
		p, err := compileElement(e.Key(), e.Value())
		if err != nil {
			return nil, err
		}
		f.preds = append(f.preds, p)
	}
	return f, nil
}

// Match reports whether doc satisfies the filter.
func (f *Filter) Match(doc bson.Raw) bool {
	for _, p := range f.preds {
		if !p(doc) {
			return false
		}
	}
	return true
}

func compileElement(key string, v bson.RawValue) (predicate, error) {
	switch key {
	case "$and", "$or", "$nor":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "%s must be an array", key)
		}
		vals, _ := arr.Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "%s/$or/$nor entries need to be full objects", key)
		}
		var subs []*Filter
		for _, sv := range vals {
			d, ok := sv.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "%s/$or/$nor entries need to be full objects", key)
			}
			sf, err := CompileFilter(bson.Raw(d))
			if err != nil {
				return nil, err
			}
			subs = append(subs, sf)
		}
		switch key {
		case "$and":
			return func(doc bson.Raw) bool {
				for _, s := range subs {
					if !s.Match(doc) {
						return false
					}
				}
				return true
			}, nil
		case "$or":
			return func(doc bson.Raw) bool {
				for _, s := range subs {
					if s.Match(doc) {
						return true
					}
				}
				return false
			}, nil
		default:
			return func(doc bson.Raw) bool {
				for _, s := range subs {
					if s.Match(doc) {
						return false
					}
				}
				return true
			}, nil
		}
	case "$comment":
		return func(bson.Raw) bool { return true }, nil
	}
	if len(key) > 0 && key[0] == '$' {
		return nil, mongoerr.New(mongoerr.BadValue, "unknown top level operator: %s", key)
	}
	path := key
	if d, ok := v.DocumentOK(); ok {
		if first, err := bson.Raw(d).IndexErr(0); err == nil && len(first.Key()) > 0 && first.Key()[0] == '$' {
			return compileOperators(path, bson.Raw(d))
		}
	}
	return fieldPred(path, func(x bson.RawValue) bool { return equal(x, v) }, true), nil
}

func compileOperators(path string, ops bson.Raw) (predicate, error) {
	elems, _ := ops.Elements()
	var preds []predicate
	for _, e := range elems {
		op, arg := e.Key(), e.Value()
		var p predicate
		switch op {
		case "$eq":
			p = fieldPred(path, func(x bson.RawValue) bool { return equal(x, arg) }, true)
		case "$ne":
			inner := fieldPred(path, func(x bson.RawValue) bool { return equal(x, arg) }, true)
			p = func(doc bson.Raw) bool { return !inner(doc) }
		case "$gt", "$gte", "$lt", "$lte":
			want := map[string]func(int) bool{
				"$gt": func(c int) bool { return c > 0 }, "$gte": func(c int) bool { return c >= 0 },
				"$lt": func(c int) bool { return c < 0 }, "$lte": func(c int) bool { return c <= 0 },
			}[op]
			p = fieldPred(path, func(x bson.RawValue) bool {
				// Range operators only compare within a type bracket, as mongod does.
				if typeOrder(x.Type) != typeOrder(arg.Type) {
					return false
				}
				return want(Compare(x, arg))
			}, false)
		case "$in", "$nin":
			arr, ok := arg.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "%s needs an array", op)
			}
			set, _ := arr.Values()
			in := fieldPred(path, func(x bson.RawValue) bool {
				for _, s := range set {
					if equal(x, s) {
						return true
					}
				}
				return false
			}, true)
			if op == "$in" {
				p = in
			} else {
				p = func(doc bson.Raw) bool { return !in(doc) }
			}
		case "$exists":
			want := Truthy(arg)
			p = func(doc bson.Raw) bool { return (Lookup(doc, path).Type != 0) == want }
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", op)
		}
		preds = append(preds, p)
	}
	return func(doc bson.Raw) bool {
		for _, p := range preds {
			if !p(doc) {
				return false
			}
		}
		return true
	}, nil
}

// fieldPred applies test to the value at path and, when that value is an
// array, to each element (mongod's implicit array traversal). nullMatches
// lets a missing field match a test against null.
func fieldPred(path string, test func(bson.RawValue) bool, nullMatches bool) predicate {
	return func(doc bson.Raw) bool {
		v := Lookup(doc, path)
		if v.Type == 0 {
			if nullMatches {
				return test(Null)
			}
			return false
		}
		if test(v) {
			return true
		}
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, e := range vals {
				if test(e) {
					return true
				}
			}
		}
		return false
	}
}

func equal(a, b bson.RawValue) bool {
	if typeOrder(a.Type) != typeOrder(b.Type) {
		return false
	}
	return Compare(a, b) == 0
}
