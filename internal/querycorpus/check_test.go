package querycorpus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestServerErrorCode: a server's error code is read from every error type
// the driver returns for it, wrapped or not, and errors without one are
// not given a code.
func TestServerErrorCode(t *testing.T) {
	raw, err := bson.Marshal(bson.D{{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(66)}, {Key: "codeName", Value: "ImmutableField"}})
	if err != nil {
		t.Fatal(err)
	}
	wce := &mongo.WriteConcernError{Name: "WriteConcernTimeout", Code: 50}
	for _, tc := range []struct {
		name     string
		err      error
		code     int32
		codeName string
		ok       bool
	}{
		{"command error", mongo.CommandError{Code: 40, Name: "ConflictingUpdateOperators"}, 40, "ConflictingUpdateOperators", true},
		{"wrapped command error", fmt.Errorf("running: %w", mongo.CommandError{Code: 2, Name: "BadValue"}), 2, "BadValue", true},
		{"write exception, write error without codeName", mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 28}}}, 28, "", true},
		{"write exception, codeName in the raw write error", mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 66, Raw: raw}}}, 66, "ImmutableField", true},
		{"write exception, first write error wins", mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 14}, {Code: 9}}, WriteConcernError: wce}, 14, "", true},
		{"write exception, write concern error only", mongo.WriteException{WriteConcernError: wce}, 50, "WriteConcernTimeout", true},
		{"bulk write exception", fmt.Errorf("insert: %w", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 11000}}}}), 11000, "", true},
		{"bulk write exception, write concern error only", mongo.BulkWriteException{WriteConcernError: wce}, 50, "WriteConcernTimeout", true},
		{"write exception with nothing in it", mongo.WriteException{}, 0, "", false},
		{"context error", fmt.Errorf("find: %w", context.DeadlineExceeded), 0, "", false},
		{"plain error", errors.New("connection reset"), 0, "", false},
	} {
		code, name, ok := serverErrorCode(tc.err)
		if code != tc.code || name != tc.codeName || ok != tc.ok {
			t.Errorf("%s: got (%d, %q, %v), want (%d, %q, %v)", tc.name, code, name, ok, tc.code, tc.codeName, tc.ok)
		}
	}
}

// TestErrorOutcomeComparesCodes: a write exception's code decides whether
// an error case passes; a codeName is compared only when the server sent
// one.
func TestErrorOutcomeComparesCodes(t *testing.T) {
	c := Case{WantCode: 40, WantCodeName: "ConflictingUpdateOperators"}
	if got, pass := c.errorOutcome(mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 40}}}); !pass || got != "error 40" {
		t.Errorf("code 40 without codeName: got %q pass=%v, want \"error 40\" passing", got, pass)
	}
	if got, pass := c.errorOutcome(mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 9}}}); pass || got != "error 9" {
		t.Errorf("code 9: got %q pass=%v, want \"error 9\" failing", got, pass)
	}
	if _, pass := c.errorOutcome(mongo.CommandError{Code: 40, Name: "Location40"}); pass {
		t.Error("a wrong codeName passed")
	}
	if got, pass := c.errorOutcome(errors.New("connection reset")); pass || got != "error: connection reset" {
		t.Errorf("an error without a code: got %q pass=%v", got, pass)
	}
}
