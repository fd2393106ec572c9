package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// splitPath splits a dotted field path into its components.
func splitPath(path string) []string { return strings.Split(path, ".") }

// arrayIndex reports whether a path component names an array position, as
// mongod reads "a.0.b": a run of decimal digits.
func arrayIndex(part string) (int, bool) {
	if part == "" || len(part) > 9 {
		return 0, false
	}
	for _, c := range part {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(part)
	return n, err == nil
}

// walkPath visits every value a query filter reads at parts below v, the
// way mongod's path traversal does: through embedded documents, through
// each document element of an array, and into an array position when the
// component is numeric. A branch that ends without a value is visited as
// Missing. visit returns true to stop the walk; walkPath reports whether it
// stopped.
func walkPath(v bson.RawValue, parts []string, visit func(bson.RawValue) bool) bool {
	if len(parts) == 0 {
		return visit(v)
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		next, err := v.Document().LookupErr(parts[0])
		if err != nil {
			next = Missing
		}
		return walkPath(next, parts[1:], visit)
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		visited := false
		if i, ok := arrayIndex(parts[0]); ok && i < len(vals) {
			visited = true
			if walkPath(vals[i], parts[1:], visit) {
				return true
			}
		}
		for _, e := range vals {
			if e.Type != bson.TypeEmbeddedDocument {
				continue
			}
			visited = true
			if walkPath(e, parts, visit) {
				return true
			}
		}
		if !visited {
			return visit(Missing)
		}
		return false
	}
	return visit(Missing)
}

// aggPath resolves an aggregation field path ("$a.b") below v: through
// embedded documents, and through arrays by resolving the rest of the path
// in each element and collecting the values found into an array (elements
// without the field are left out), as mongod's expression field paths do.
func aggPath(v bson.RawValue, parts []string) bson.RawValue {
	if len(parts) == 0 {
		return v
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		next, err := v.Document().LookupErr(parts[0])
		if err != nil {
			return Missing
		}
		return aggPath(next, parts[1:])
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		var out []bson.RawValue
		for _, e := range vals {
			if e.Type != bson.TypeEmbeddedDocument && e.Type != bson.TypeArray {
				continue
			}
			if r := aggPath(e, parts); r.Type != 0 {
				out = append(out, r)
			}
		}
		return Array(out)
	}
	return Missing
}

// Array makes an array value of vals (Missing ones skipped).
func Array(vals []bson.RawValue) bson.RawValue {
	idx, b := bsoncore.AppendArrayStart(nil)
	n := 0
	for _, v := range vals {
		if v.Type == 0 {
			continue
		}
		b = appendValue(b, strconv.Itoa(n), v)
		n++
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bson.RawValue{Type: bson.TypeArray, Value: b}
}
