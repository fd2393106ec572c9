package query

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Filter is a compiled query predicate.
type Filter struct {
	preds []predicate
	// paths are the field paths the filter's conditions name, at any depth
	// of $and (the positional update operator needs to know whether the
	// query constrained an array).
	paths []string
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
			if first.Key() == "$eq" && len(mustElems(d)) == 1 && first.Value().Type != bson.TypeArray && first.Value().Type != bson.TypeRegex {
				return first.Value(), true
			}
			return Missing, false
		}
	}
	return v, v.Type != bson.TypeArray && v.Type != bson.TypeRegex && v.Type != bson.TypeNull
}

func mustElems(d bson.Raw) []bson.RawElement {
	e, _ := d.Elements()
	return e
}

// CompileFilter compiles a find/$match filter: equality and the operators
// $eq $ne $gt $gte $lt $lte $in $nin $exists $type $size $all $elemMatch
// $not $mod on field paths (dotted, through arrays and array positions), and
// $and/$or/$nor of such filters. Operators mongod has and mongosim does not
// ($regex, $expr, $where, geo and text search, bitwise tests) are refused
// with NotImplemented rather than answered approximately.
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
		p, err := f.compileElement(e.Key(), e.Value())
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

// Constrains reports whether the filter names path or a path below it (at
// the top level or inside $and).
func (f *Filter) Constrains(path string) bool {
	for _, p := range f.paths {
		if p == path || strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// unimplementedQueryOperators are operators mongod accepts that mongosim
// does not evaluate.
var unimplementedQueryOperators = map[string]bool{
	"$regex": true, "$options": true, "$where": true, "$text": true, "$expr": true, "$jsonSchema": true,
	"$geoWithin": true, "$geoIntersects": true, "$near": true, "$nearSphere": true, "$within": true,
	"$bitsAllSet": true, "$bitsAnySet": true, "$bitsAllClear": true, "$bitsAnyClear": true, "$sampleRate": true,
}

func notImplemented(what string) error {
	return mongoerr.New(mongoerr.NotImplemented, "%s is not implemented by mongosim", what)
}

func (f *Filter) compileElement(key string, v bson.RawValue) (predicate, error) {
	switch key {
	case "$and", "$or", "$nor":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "%s must be an array", key)
		}
		vals, _ := arr.Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "$and/$or/$nor must be a nonempty array")
		}
		var subs []*Filter
		for _, sv := range vals {
			d, ok := sv.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$or/$and/$nor entries need to be full objects")
			}
			sf, err := CompileFilter(bson.Raw(d))
			if err != nil {
				return nil, err
			}
			if key == "$and" {
				f.paths = append(f.paths, sf.paths...)
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
	if strings.HasPrefix(key, "$") {
		if unimplementedQueryOperators[key] {
			return nil, notImplemented("the query operator " + key)
		}
		return nil, mongoerr.New(mongoerr.BadValue, "unknown top level operator: %s", key)
	}
	f.paths = append(f.paths, key)
	return compileCondition(splitPath(key), v)
}

// compileCondition compiles the condition v (a value or an operator
// object) on the field at parts.
func compileCondition(parts []string, v bson.RawValue) (predicate, error) {
	if d, ok := v.DocumentOK(); ok {
		if first, err := bson.Raw(d).IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
			return compileOperators(parts, bson.Raw(d))
		}
	}
	if v.Type == bson.TypeRegex {
		return nil, notImplemented("matching a regular expression")
	}
	return fieldPred(parts, func(x bson.RawValue) bool { return equal(x, v) }, true), nil
}

// typeAliases are $type's string names, as mongod spells them.
var typeAliases = map[string]bson.Type{
	"double": bson.TypeDouble, "string": bson.TypeString, "object": bson.TypeEmbeddedDocument,
	"array": bson.TypeArray, "binData": bson.TypeBinary, "undefined": bson.TypeUndefined,
	"objectId": bson.TypeObjectID, "bool": bson.TypeBoolean, "date": bson.TypeDateTime,
	"null": bson.TypeNull, "regex": bson.TypeRegex, "dbPointer": bson.TypeDBPointer,
	"javascript": bson.TypeJavaScript, "symbol": bson.TypeSymbol, "int": bson.TypeInt32,
	"timestamp": bson.TypeTimestamp, "long": bson.TypeInt64, "decimal": bson.TypeDecimal128,
	"minKey": bson.TypeMinKey, "maxKey": bson.TypeMaxKey,
}

// TypeName is a BSON type's name as mongod's error messages spell it
// (the $type alias).
func TypeName(t bson.Type) string {
	for name, a := range typeAliases {
		if a == t {
			return name
		}
	}
	return t.String()
}

func compileType(arg bson.RawValue) (func(bson.RawValue) bool, error) {
	var wants []bson.RawValue
	if arr, ok := arg.ArrayOK(); ok {
		wants, _ = arr.Values()
	} else {
		wants = []bson.RawValue{arg}
	}
	var types []bson.Type
	number := false
	for _, w := range wants {
		if s, ok := w.StringValueOK(); ok {
			if s == "number" {
				number = true
				continue
			}
			t, known := typeAliases[s]
			if !known {
				return nil, mongoerr.New(mongoerr.BadValue, "Unknown type name alias: %s", s)
			}
			types = append(types, t)
			continue
		}
		n, ok := w.AsInt64OK()
		if !ok || (!IsNumber(w)) {
			return nil, mongoerr.New(mongoerr.BadValue, "type must be represented as a number or a string")
		}
		switch {
		case n == -1:
			types = append(types, bson.TypeMinKey)
		case n == 127:
			types = append(types, bson.TypeMaxKey)
		case n >= 1 && n <= 19:
			types = append(types, bson.Type(n))
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "Invalid numerical type code: %d", n)
		}
	}
	return func(x bson.RawValue) bool {
		if number && (IsNumber(x) || x.Type == bson.TypeDecimal128) {
			return true
		}
		for _, t := range types {
			if x.Type == t {
				return true
			}
		}
		return false
	}, nil
}

func compileOperators(parts []string, ops bson.Raw) (predicate, error) {
	elems, _ := ops.Elements()
	var preds []predicate
	for _, e := range elems {
		op, arg := e.Key(), e.Value()
		var p predicate
		switch op {
		case "$eq":
			if arg.Type == bson.TypeRegex {
				p = fieldPred(parts, func(x bson.RawValue) bool { return x.Type == bson.TypeRegex && equal(x, arg) }, false)
				break
			}
			p = fieldPred(parts, func(x bson.RawValue) bool { return equal(x, arg) }, true)
		case "$ne":
			inner := fieldPred(parts, func(x bson.RawValue) bool { return equal(x, arg) }, true)
			p = func(doc bson.Raw) bool { return !inner(doc) }
		case "$gt", "$gte", "$lt", "$lte":
			want := map[string]func(int) bool{
				"$gt": func(c int) bool { return c > 0 }, "$gte": func(c int) bool { return c >= 0 },
				"$lt": func(c int) bool { return c < 0 }, "$lte": func(c int) bool { return c <= 0 },
			}[op]
			if arg.Type == bson.TypeRegex {
				return nil, notImplemented(op + " with a regular expression")
			}
			p = fieldPred(parts, func(x bson.RawValue) bool {
				// Range operators compare only within a type bracket, as
				// mongod does; a missing field reads as null.
				if typeOrder(x.Type) != typeOrder(arg.Type) {
					return false
				}
				return want(Compare(x, arg))
			}, true)
		case "$in", "$nin":
			arr, ok := arg.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "%s needs an array", op)
			}
			set, _ := arr.Values()
			for _, s := range set {
				if s.Type == bson.TypeRegex {
					return nil, notImplemented(op + " with a regular expression")
				}
				if d, ok := s.DocumentOK(); ok {
					if first, err := bson.Raw(d).IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
						return nil, mongoerr.New(mongoerr.BadValue, "cannot nest $ under %s", op)
					}
				}
			}
			in := fieldPred(parts, func(x bson.RawValue) bool {
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
			p = func(doc bson.Raw) bool {
				found := walkPath(Doc(doc), parts, func(x bson.RawValue) bool { return x.Type != 0 })
				return found == want
			}
		case "$type":
			test, err := compileType(arg)
			if err != nil {
				return nil, err
			}
			p = fieldPred(parts, test, false)
		case "$size":
			f, ok := arg.AsFloat64OK()
			if !ok || !IsNumber(arg) {
				return nil, mongoerr.New(mongoerr.BadValue, "$size needs a number")
			}
			if f != math.Trunc(f) {
				return nil, mongoerr.New(mongoerr.BadValue, "$size must be a whole number")
			}
			if f < 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "$size may not be negative")
			}
			n := int(f)
			p = leafPred(parts, func(x bson.RawValue) bool {
				arr, ok := x.ArrayOK()
				if !ok {
					return false
				}
				vals, _ := arr.Values()
				return len(vals) == n
			})
		case "$all":
			arr, ok := arg.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$all needs an array")
			}
			set, _ := arr.Values()
			var subs []predicate
			for _, s := range set {
				if d, ok := s.DocumentOK(); ok {
					if first, err := bson.Raw(d).IndexErr(0); err == nil && first.Key() == "$elemMatch" {
						return nil, notImplemented("$all of $elemMatch")
					}
				}
				sub, err := compileCondition(parts, s)
				if err != nil {
					return nil, err
				}
				subs = append(subs, sub)
			}
			p = func(doc bson.Raw) bool {
				if len(subs) == 0 {
					return false
				}
				for _, s := range subs {
					if !s(doc) {
						return false
					}
				}
				return true
			}
		case "$elemMatch":
			d, ok := arg.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$elemMatch needs an Object")
			}
			elemTest, err := compileElemMatch(bson.Raw(d))
			if err != nil {
				return nil, err
			}
			p = leafPred(parts, func(x bson.RawValue) bool {
				arr, ok := x.ArrayOK()
				if !ok {
					return false
				}
				vals, _ := arr.Values()
				for _, e := range vals {
					if elemTest(e) {
						return true
					}
				}
				return false
			})
		case "$not":
			if arg.Type == bson.TypeRegex {
				return nil, notImplemented("$not with a regular expression")
			}
			d, ok := arg.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "$not needs a regex or a document")
			}
			if len(mustElems(bson.Raw(d))) == 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "$not cannot be empty")
			}
			if first, _ := bson.Raw(d).IndexErr(0); !strings.HasPrefix(first.Key(), "$") {
				return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", first.Key())
			}
			inner, err := compileOperators(parts, bson.Raw(d))
			if err != nil {
				return nil, err
			}
			p = func(doc bson.Raw) bool { return !inner(doc) }
		case "$mod":
			arr, ok := arg.ArrayOK()
			vals, _ := arr.Values()
			if !ok || len(vals) != 2 || !IsNumber(vals[0]) || !IsNumber(vals[1]) {
				return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, needs to be an array of two numbers")
			}
			div, rem := int64(Float(vals[0])), int64(Float(vals[1]))
			if div == 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "divisor cannot be 0")
			}
			p = fieldPred(parts, func(x bson.RawValue) bool {
				return IsNumber(x) && !math.IsNaN(Float(x)) && int64(Float(x))%div == rem
			}, false)
		default:
			if unimplementedQueryOperators[op] {
				return nil, notImplemented("the query operator " + op)
			}
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

// compileElemMatch compiles $elemMatch's argument into a test of one array
// element: operators apply to the element itself, a query applies to an
// element that is a document.
func compileElemMatch(d bson.Raw) (func(bson.RawValue) bool, error) {
	first, err := d.IndexErr(0)
	if err != nil {
		return func(bson.RawValue) bool { return false }, nil
	}
	if strings.HasPrefix(first.Key(), "$") && first.Key() != "$and" && first.Key() != "$or" && first.Key() != "$nor" {
		p, err := compileOperators([]string{"v"}, d)
		if err != nil {
			return nil, err
		}
		return func(e bson.RawValue) bool { return p(Build([]string{"v"}, []bson.RawValue{e})) }, nil
	}
	f, err := CompileFilter(d)
	if err != nil {
		return nil, err
	}
	return func(e bson.RawValue) bool {
		doc, ok := e.DocumentOK()
		return ok && f.Match(bson.Raw(doc))
	}, nil
}

// fieldPred applies test to every value the path reaches and, when that
// value is an array, to each of its elements (mongod's implicit array
// traversal). nullMatches lets a path that reaches no value match a test
// against null, as an equality to null matches a missing field.
func fieldPred(parts []string, test func(bson.RawValue) bool, nullMatches bool) predicate {
	return func(doc bson.Raw) bool {
		return walkPath(Doc(doc), parts, func(v bson.RawValue) bool {
			if v.Type == 0 {
				return nullMatches && test(Null)
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
		})
	}
}

// leafPred applies test to the values the path reaches, without expanding
// arrays ($size and $elemMatch test the array itself).
func leafPred(parts []string, test func(bson.RawValue) bool) predicate {
	return func(doc bson.Raw) bool {
		return walkPath(Doc(doc), parts, func(v bson.RawValue) bool { return v.Type != 0 && test(v) })
	}
}

func equal(a, b bson.RawValue) bool {
	if typeOrder(a.Type) != typeOrder(b.Type) {
		return false
	}
	return Compare(a, b) == 0
}

// CompileElementTest compiles a condition on one array element, as $pull
// reads its argument: an operator object tests the element itself, any
// other object is a query on an element that is a document, and any other
// value is an equality.
func CompileElementTest(v bson.RawValue) (func(bson.RawValue) bool, error) {
	if d, ok := v.DocumentOK(); ok {
		if err := checked(bson.Raw(d), "condition"); err != nil {
			return nil, err
		}
		return compileElemMatch(bson.Raw(d))
	}
	if v.Type == bson.TypeRegex {
		return nil, notImplemented("matching a regular expression")
	}
	return func(e bson.RawValue) bool { return equal(e, v) }, nil
}

// Equal reports whether two values are equal as a query's equality sees
// them (1, 1.0 and int64 1 are equal).
func Equal(a, b bson.RawValue) bool { return equal(a, b) }

// Arith applies '+' or '*' with mongod's numeric promotion (see arith).
func Arith(x, y bson.RawValue, op byte) bson.RawValue { return arith(x, y, op) }
