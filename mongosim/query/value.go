// Package query is mongosim's query engine: BSON value ordering, filters,
// sort, projection, expressions and the aggregation stages qmlsab's workloads
// use. Filters and pipelines are compiled once and then run over documents
// kept as bson.Raw.
//
// A pipeline runs as mongod runs one (exec.go): documents stream through
// the stages one at a time as the caller pulls them, blocking stages hold
// what they must within mongod's memory limits (Limits), and every stage
// checks for an interrupt as it works, so that no aggregate can exhaust
// the process's memory or outlive a kill.
//
// It is written by hand because no Go library executes MongoDB queries in
// process (FerretDB needs a SQL backend and lacks $setWindowFields, $merge
// and $out); only the subset mongosim serves is implemented, and anything
// else is refused with the error mongod gives.
//
// Every entry point that takes a client's document (Compile, CompileFilter,
// CompileSort, CompileProjection, IDEquality) first checks it at every depth
// (checked): a document that passes the driver's Validate can still hold a
// value whose own bytes are malformed, and reading it would panic. Malformed
// input is refused with InvalidBSON, as mongod refuses it. Documents the
// compiled filters and pipelines then run over must be checked ones too (the
// wire layer checks every document it receives).
package query

import (
	"bytes"
	"cmp"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// checked refuses a client's document unless every value in it, at every
// depth, is well formed.
func checked(doc bson.Raw, what string) error {
	if err := bsoncheck.Document(doc); err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "%s is not valid BSON: %v", what, err)
	}
	return nil
}

// Missing is the zero RawValue: a field that is absent.
var Missing bson.RawValue

// Null is the BSON null value.
var Null = bson.RawValue{Type: bson.TypeNull}

// typeOrder is mongod's canonical ordering of BSON types for comparisons.
func typeOrder(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 1
	case 0, bson.TypeNull, bson.TypeUndefined:
		return 2
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return 3
	case bson.TypeString, bson.TypeSymbol:
		return 4
	case bson.TypeEmbeddedDocument:
		return 5
	case bson.TypeArray:
		return 6
	case bson.TypeBinary:
		return 7
	case bson.TypeObjectID:
		return 8
	case bson.TypeBoolean:
		return 9
	case bson.TypeDateTime:
		return 10
	case bson.TypeTimestamp:
		return 11
	case bson.TypeRegex:
		return 12
	case bson.TypeMaxKey:
		return 100
	default:
		return 50
	}
}

// IsNumber reports whether v is a numeric BSON value.
func IsNumber(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		return true
	}
	return false
}

// Float returns v as a float64 (0 for non-numbers).
func Float(v bson.RawValue) float64 {
	f, _ := v.AsFloat64OK()
	return f
}

// text is a string's or a deprecated symbol's characters: the two share
// a place in the type order and compare by their text.
func text(v bson.RawValue) string {
	if s, ok := v.SymbolOK(); ok {
		return s
	}
	return v.StringValue()
}

// Compare orders two values as mongod does: first by canonical type order,
// then by value. Missing sorts as null.
func Compare(a, b bson.RawValue) int {
	ta, tb := typeOrder(a.Type), typeOrder(b.Type)
	if ta != tb {
		return cmp.Compare(ta, tb)
	}
	switch ta {
	case 2, 1, 100:
		return 0
	case 3:
		return compareNumbers(a, b)
	case 4:
		return strings.Compare(text(a), text(b))
	case 5:
		return compareDocs(a.Document(), b.Document())
	case 6:
		return compareDocs(bson.Raw(a.Array()), bson.Raw(b.Array()))
	case 7:
		sa, da := a.Binary()
		sb, db := b.Binary()
		if len(da) != len(db) {
			return cmp.Compare(len(da), len(db))
		}
		if sa != sb {
			return cmp.Compare(int(sa), int(sb))
		}
		return bytes.Compare(da, db)
	case 8:
		oa, ob := a.ObjectID(), b.ObjectID()
		return bytes.Compare(oa[:], ob[:])
	case 9:
		ba, bb := a.Boolean(), b.Boolean()
		switch {
		case ba == bb:
			return 0
		case !ba:
			return -1
		default:
			return 1
		}
	case 10:
		return cmp.Compare(a.DateTime(), b.DateTime())
	case 11:
		at, ai := a.Timestamp()
		bt, bi := b.Timestamp()
		if at != bt {
			return cmp.Compare(int64(at), int64(bt))
		}
		return cmp.Compare(int64(ai), int64(bi))
	}
	return bytes.Compare(a.Value, b.Value)
}

func compareNumbers(a, b bson.RawValue) int {
	if a.Type != bson.TypeDouble && b.Type != bson.TypeDouble {
		ia, _ := a.AsInt64OK()
		ib, _ := b.AsInt64OK()
		return cmp.Compare(ia, ib)
	}
	fa, fb := Float(a), Float(b)
	switch {
	case math.IsNaN(fa) && math.IsNaN(fb):
		return 0
	case math.IsNaN(fa):
		return -1
	case math.IsNaN(fb):
		return 1
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

func compareDocs(a, b bson.Raw) int {
	ea, _ := a.Elements()
	eb, _ := b.Elements()
	for i := 0; i < len(ea) && i < len(eb); i++ {
		va, vb := ea[i].Value(), eb[i].Value()
		if c := cmp.Compare(typeOrder(va.Type), typeOrder(vb.Type)); c != 0 {
			return c
		}
		if c := strings.Compare(ea[i].Key(), eb[i].Key()); c != 0 {
			return c
		}
		if c := Compare(va, vb); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ea), len(eb))
}

// Lookup resolves a dotted path in doc. It descends through embedded
// documents only; a path through an array is Missing.
func Lookup(doc bson.Raw, path string) bson.RawValue {
	v, err := doc.LookupErr(strings.Split(path, ".")...)
	if err != nil {
		return Missing
	}
	return v
}

// Int32 makes an int32 value.
func Int32(v int32) bson.RawValue {
	return bson.RawValue{Type: bson.TypeInt32, Value: bsoncore.AppendInt32(nil, v)}
}

// Int64 makes an int64 value.
func Int64(v int64) bson.RawValue {
	return bson.RawValue{Type: bson.TypeInt64, Value: bsoncore.AppendInt64(nil, v)}
}

// Double makes a double value.
func Double(v float64) bson.RawValue {
	return bson.RawValue{Type: bson.TypeDouble, Value: bsoncore.AppendDouble(nil, v)}
}

// Doc makes an embedded-document value.
func Doc(d bson.Raw) bson.RawValue {
	return bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d}
}

// Build assembles a document from ordered key/value pairs, skipping Missing.
func Build(keys []string, vals []bson.RawValue) bson.Raw {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for i, k := range keys {
		if vals[i].Type == 0 {
			continue
		}
		b = appendValue(b, k, vals[i])
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// Truthy reports whether v counts as true in a projection or expression.
func Truthy(v bson.RawValue) bool {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return false
	case bson.TypeBoolean:
		return v.Boolean()
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		return Float(v) != 0
	}
	return true
}

func appendValue(b []byte, key string, v bson.RawValue) []byte {
	return bsoncore.AppendValueElement(b, key, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
}
