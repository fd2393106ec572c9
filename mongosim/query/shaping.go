package query

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// knownStages are stages mongod has and mongosim does not run: refused
// with NotImplemented rather than as unrecognized.
var knownStages = map[string]bool{
	"$lookup": true, "$facet": true, "$bucket": true, "$bucketAuto": true, "$sortByCount": true,
	"$replaceRoot": true, "$replaceWith": true, "$unset": true, "$sample": true, "$graphLookup": true,
	"$geoNear": true, "$indexStats": true, "$collStats": true, "$redact": true, "$unionWith": true,
	"$densify": true, "$fill": true, "$documents": true, "$listSessions": true, "$planCacheStats": true,
}

// wholeNumber reads a numeric stage argument that must be an integer.
func wholeNumber(v bson.RawValue) (int64, bool) {
	if !IsNumber(v) {
		return 0, false
	}
	f := Float(v)
	if v.Type == bson.TypeDouble && (f != math.Trunc(f) || math.IsInf(f, 0)) {
		return 0, false
	}
	n, _ := v.AsInt64OK()
	return n, true
}

type skipStage int64

// compileSkip: mongod (5.0+) refuses any $skip that is not a
// non-negative integer with 5107200.
func compileSkip(spec bson.RawValue) (Stage, error) {
	n, ok := wholeNumber(spec)
	if !ok || n < 0 {
		return nil, mongoerr.New(5107200, "invalid argument to $skip stage: expected a non-negative integer, got %s", spec)
	}
	return skipStage(n), nil
}

func (skipStage) Name() string { return "$skip" }
func (s skipStage) open(x *Execution, in stream) stream {
	skipped := int64(0)
	return streamFunc(func() (bson.Raw, error) {
		for ; skipped < int64(s); skipped++ {
			d, err := in.next()
			if err != nil || d == nil {
				return nil, err
			}
			if err := x.tick(); err != nil {
				return nil, err
			}
		}
		return in.next()
	})
}

type unwindStage struct {
	path     []string
	preserve bool
	index    string
}

func compileUnwind(spec bson.RawValue) (Stage, error) {
	u := unwindStage{}
	var path string
	switch spec.Type {
	case bson.TypeString:
		path = spec.StringValue()
	case bson.TypeEmbeddedDocument:
		elems, _ := spec.Document().Elements()
		for _, e := range elems {
			switch e.Key() {
			case "path":
				s, ok := e.Value().StringValueOK()
				if !ok {
					return nil, mongoerr.New(28808, "expected a string as the path for $unwind stage")
				}
				path = s
			case "preserveNullAndEmptyArrays":
				b, ok := e.Value().BooleanOK()
				if !ok {
					return nil, mongoerr.New(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage")
				}
				u.preserve = b
			case "includeArrayIndex":
				s, ok := e.Value().StringValueOK()
				if !ok || s == "" || strings.HasPrefix(s, "$") {
					return nil, mongoerr.New(28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage")
				}
				u.index = s
			default:
				return nil, mongoerr.New(28811, "unrecognized option to $unwind stage: %s", e.Key())
			}
		}
		if path == "" {
			return nil, mongoerr.New(28812, "no path specified to $unwind stage")
		}
	default:
		return nil, mongoerr.New(15981, "expected either a string or an object as specification for $unwind stage, got %s", spec.Type)
	}
	if !strings.HasPrefix(path, "$") {
		return nil, mongoerr.New(28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	if strings.Contains(u.index, ".") {
		return nil, notImplemented("a dotted includeArrayIndex")
	}
	u.path = splitPath(path[1:])
	return u, nil
}

func (unwindStage) Name() string { return "$unwind" }

// open: $unwind streams, one output document at a time, however long the
// array it opens.
func (u unwindStage) open(x *Execution, in stream) stream {
	var d bson.Raw
	var elems []bson.RawValue
	i := 0
	return streamFunc(func() (bson.Raw, error) {
		for {
			if i < len(elems) {
				if err := x.tick(); err != nil {
					return nil, err
				}
				out := u.withIndex(setPath(d, u.path, elems[i]), Int64(int64(i)))
				i++
				return out, checkDocSize(out)
			}
			elems, i = nil, 0
			var err error
			if d, err = in.next(); err != nil || d == nil {
				return nil, err
			}
			if err := x.tick(); err != nil {
				return nil, err
			}
			v := lookupDocs(d, u.path)
			switch {
			case v.Type == bson.TypeArray:
				elems, _ = v.Array().Values()
				if len(elems) == 0 && u.preserve {
					out := u.withIndex(setPath(d, u.path, Missing), Null)
					return out, checkDocSize(out)
				}
			case nullish(v):
				if u.preserve {
					out := u.withIndex(d, Null)
					return out, checkDocSize(out)
				}
			default:
				out := u.withIndex(d, Null)
				return out, checkDocSize(out)
			}
		}
	})
}

func (u unwindStage) withIndex(d bson.Raw, i bson.RawValue) bson.Raw {
	if u.index == "" {
		return d
	}
	return setPath(d, []string{u.index}, i)
}

// lookupDocs follows a path through embedded documents only.
func lookupDocs(d bson.Raw, parts []string) bson.RawValue {
	v, err := d.LookupErr(parts...)
	if err != nil {
		return Missing
	}
	return v
}

// setPath returns d with the field at parts (through embedded documents)
// set to v, or removed when v is Missing; missing or non-document parents
// become documents. An existing field keeps its place; a new one is
// appended.
func setPath(d bson.Raw, parts []string, v bson.RawValue) bson.Raw {
	keys, vals := docFields(d)
	i := -1
	for j, k := range keys {
		if k == parts[0] {
			i = j
			break
		}
	}
	nv := v
	if len(parts) > 1 {
		sub := bson.Raw{5, 0, 0, 0, 0}
		if i >= 0 && vals[i].Type == bson.TypeEmbeddedDocument {
			sub = vals[i].Document()
		}
		nv = Doc(setPath(sub, parts[1:], v))
	}
	if i >= 0 {
		vals[i] = nv
	} else {
		keys, vals = append(keys, parts[0]), append(vals, nv)
	}
	return Build(keys, vals)
}

type countStage string

func compileCount(spec bson.RawValue) (Stage, error) {
	s, ok := spec.StringValueOK()
	switch {
	case !ok:
		return nil, mongoerr.New(40156, "the count field must be a non-empty string")
	case s == "":
		return nil, mongoerr.New(40157, "the count field must be a non-empty string")
	case strings.HasPrefix(s, "$"):
		return nil, mongoerr.New(40158, "the count field cannot be a $-prefixed path")
	case strings.Contains(s, "."):
		return nil, mongoerr.New(40160, "the count field cannot contain '.'")
	}
	return countStage(s), nil
}

func (countStage) Name() string { return "$count" }
func (c countStage) open(x *Execution, in stream) stream {
	done := false
	return streamFunc(func() (bson.Raw, error) {
		if done {
			return nil, nil
		}
		done = true
		var n sumAcc
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
			n.add(Int32(1))
		}
		if n.n == 0 {
			return nil, nil
		}
		return Build([]string{string(c)}, []bson.RawValue{n.value()}), nil
	})
}

type addFieldsStage struct {
	name  string
	paths [][]string
	exprs []Expr
}

func compileAddFields(name string, spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(40272, "%s specification stage must be an object, got %s", name, spec.Type)
	}
	a := addFieldsStage{name: name}
	elems, _ := bson.Raw(d).Elements()
	for _, e := range elems {
		if strings.HasPrefix(e.Key(), "$") {
			return nil, mongoerr.New(16410, "FieldPath field names may not start with '$'")
		}
		x, err := CompileExpr(e.Value())
		if err != nil {
			return nil, err
		}
		a.paths, a.exprs = append(a.paths, splitPath(e.Key())), append(a.exprs, x)
	}
	return a, nil
}

func (a addFieldsStage) Name() string { return a.name }
func (a addFieldsStage) open(x *Execution, in stream) stream {
	return streamFunc(func() (bson.Raw, error) {
		d, err := in.next()
		if err != nil || d == nil {
			return nil, err
		}
		if err := x.tick(); err != nil {
			return nil, err
		}
		nd := d
		for j, e := range a.exprs {
			v, err := e.Eval(d)
			if err != nil {
				return nil, err
			}
			if v.Type == 0 {
				continue
			}
			if nd = setPath(nd, a.paths[j], v); len(nd) > MaxInternalDocBytes {
				return nil, checkDocSize(nd)
			}
		}
		return nd, nil
	})
}
