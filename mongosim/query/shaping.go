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
func (s skipStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	if int64(len(in)) <= int64(s) {
		return nil, nil
	}
	return in[s:], nil
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
func (u unwindStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	var out []bson.Raw
	for _, d := range in {
		v := lookupDocs(d, u.path)
		switch {
		case v.Type == bson.TypeArray:
			vals, _ := v.Array().Values()
			if len(vals) == 0 {
				if u.preserve {
					out = append(out, u.withIndex(setPath(d, u.path, Missing), Null))
				}
				continue
			}
			for i, e := range vals {
				out = append(out, u.withIndex(setPath(d, u.path, e), Int64(int64(i))))
			}
		case v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined:
			if u.preserve {
				out = append(out, u.withIndex(d, Null))
			}
		default:
			out = append(out, u.withIndex(d, Null))
		}
	}
	return out, nil
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
func (c countStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	if len(in) == 0 {
		return nil, nil
	}
	return []bson.Raw{Build([]string{string(c)}, []bson.RawValue{Int32(int32(len(in)))})}, nil
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
func (a addFieldsStage) Run(_ Env, in []bson.Raw) ([]bson.Raw, error) {
	out := make([]bson.Raw, len(in))
	for i, d := range in {
		nd := d
		for j, x := range a.exprs {
			v, err := x.Eval(d)
			if err != nil {
				return nil, err
			}
			if v.Type == 0 {
				continue
			}
			nd = setPath(nd, a.paths[j], v)
		}
		out[i] = nd
	}
	return out, nil
}
