package bsoncheck

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestWellFormedDocumentsOfEveryTypePass(t *testing.T) {
	doc, err := bson.Marshal(bson.D{
		{Key: "d", Value: 1.5}, {Key: "s", Value: "x"}, {Key: "e", Value: ""},
		{Key: "o", Value: bson.D{{Key: "a", Value: bson.A{1, "two", bson.D{{Key: "b", Value: int64(3)}}}}}},
		{Key: "bin", Value: bson.Binary{Subtype: 0, Data: []byte{1, 2}}}, {Key: "u", Value: bson.Undefined{}},
		{Key: "oid", Value: bson.NewObjectID()}, {Key: "t", Value: true}, {Key: "dt", Value: bson.NewDateTimeFromTime(time.Unix(0, 0))},
		{Key: "n", Value: nil}, {Key: "re", Value: bson.Regex{Pattern: "^a", Options: "i"}},
		{Key: "ptr", Value: bson.DBPointer{DB: "db.c", Pointer: bson.NewObjectID()}}, {Key: "js", Value: bson.JavaScript("f()")},
		{Key: "sym", Value: bson.Symbol("s")}, {Key: "cws", Value: bson.CodeWithScope{Code: "g()", Scope: bson.D{{Key: "x", Value: 1}}}},
		{Key: "i32", Value: int32(7)}, {Key: "ts", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "i64", Value: int64(8)},
		{Key: "dec", Value: bson.NewDecimal128(1, 2)}, {Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Document(doc); err != nil {
		t.Fatalf("well-formed document refused: %v", err)
	}
}

// The driver's Validate passes both of these; reading the bad value panics.
func TestValuesTheDriverDoesNotCheckAreRefused(t *testing.T) {
	for name, doc := range map[string][]byte{
		// {$project: {v: 0, "v$\x03w": <string of declared length 0>}}: a
		// fuzzer's find that crashed the pipeline compiler.
		"zero-length string one level down": []byte("%\x00\x00\x00\x03$project\x00\x16\x00\x00\x00\x10v\x00\x00\x00\x00\x00\x02v$\x03w\x00\x00\x00\x00\x00\x00\x00"),
		// {s: <string of declared length 0>} at the top.
		"zero-length string": []byte("\x0c\x00\x00\x00\x02s\x00\x00\x00\x00\x00\x00"),
		// {o: {<element of unknown type 0x20>}} inside a well-framed document.
		"garbage inside an embedded document": []byte("\x11\x00\x00\x00\x03o\x00\x09\x00\x00\x00\x20k\x00\x00\x00\x00"),
	} {
		if bson.Raw(doc).Validate() != nil {
			t.Fatalf("%s: the driver's Validate already refuses it; the case tests nothing", name)
		}
		if err := Document(doc); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNestingBeyondMongodsLimitIsRefused(t *testing.T) {
	nest := func(levels int) []byte {
		d := bson.D{{Key: "x", Value: 1}}
		for range levels {
			d = bson.D{{Key: "x", Value: d}}
		}
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := Document(nest(MaxDepth)); err != nil {
		t.Errorf("%d levels refused: %v", MaxDepth, err)
	}
	if err := Document(nest(MaxDepth + 1)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("%d levels: got %v, want ErrTooDeep", MaxDepth+1, err)
	}
}
