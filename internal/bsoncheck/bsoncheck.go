// Package bsoncheck checks BSON that came from outside the process all the
// way down, before anything reads it.
//
// The driver's Validate (bson.Raw's and bsoncore's) checks a document's
// framing and each top-level value's length, nothing more: a string whose
// declared length is zero, or an embedded document whose own elements are
// garbage, passes it and then panics the accessor that reads it
// (StringValue, Document, Int64 and the rest). Document checks every value
// at every depth with the driver's own checked accessors, so code that
// reads a checked document may use the panicking accessors safely.
package bsoncheck

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MaxDepth is how deeply documents and arrays may nest, mongod's own
// limit: deeper input is refused rather than walked.
const MaxDepth = 200

// ErrTooDeep reports documents nested beyond MaxDepth.
var ErrTooDeep = errors.New("BSON nested too deeply")

// Document reports whether doc is one well-formed BSON document in every
// value at every depth; the error names the path to the first bad value.
func Document(doc []byte) error { return document(bsoncore.Document(doc), 0) }

func document(doc bsoncore.Document, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w (more than %d levels)", ErrTooDeep, MaxDepth)
	}
	if err := doc.Validate(); err != nil {
		return err
	}
	elems, err := doc.Elements()
	if err != nil {
		return err
	}
	for _, e := range elems {
		if err := value(e.Value(), depth); err != nil {
			return fmt.Errorf("%q: %w", e.Key(), err)
		}
	}
	return nil
}

// value checks one value's own form with the accessor that would read it.
func value(v bsoncore.Value, depth int) error {
	if err := v.Validate(); err != nil {
		return err
	}
	ok := true
	switch v.Type {
	case bsoncore.TypeString:
		_, ok = v.StringValueOK()
	case bsoncore.TypeJavaScript:
		_, ok = v.JavaScriptOK()
	case bsoncore.TypeSymbol:
		_, ok = v.SymbolOK()
	case bsoncore.TypeRegex:
		_, _, ok = v.RegexOK()
	case bsoncore.TypeDBPointer:
		_, _, ok = v.DBPointerOK()
	case bsoncore.TypeBinary:
		_, _, ok = v.BinaryOK()
	case bsoncore.TypeBoolean:
		_, ok = v.BooleanOK()
	case bsoncore.TypeEmbeddedDocument:
		var d bsoncore.Document
		if d, ok = v.DocumentOK(); ok {
			return document(d, depth+1)
		}
	case bsoncore.TypeArray:
		var a bsoncore.Array
		if a, ok = v.ArrayOK(); ok {
			return document(bsoncore.Document(a), depth+1)
		}
	case bsoncore.TypeCodeWithScope:
		var scope bsoncore.Document
		if _, scope, ok = v.CodeWithScopeOK(); ok {
			return document(scope, depth+1)
		}
	}
	if !ok {
		return fmt.Errorf("malformed BSON %s value", v.Type)
	}
	return nil
}
